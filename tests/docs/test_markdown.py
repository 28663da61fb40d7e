"""The checker of the course text can fail: its pieces on small inputs."""
from .markdown import anchors, blocks, github_slug, quote_found, same_numbers

BEGIN, END = "# BEGIN " + "SOLUTION ch01.2", "# END " + "SOLUTION"   # no marker in this file
SOURCE = f'''class Mul:
    def backward(self, g):
        {BEGIN}
        ga = g * self.b
        gb = g * self.a
        {END}
        return ga, gb
'''


def test_quote_found_ignores_markers_and_outer_indentation_only():
    assert quote_found("ga = g * self.b\ngb = g * self.a\n", SOURCE)
    assert quote_found("        ga = g * self.b\n        gb = g * self.a\n        return ga, gb\n",
                       SOURCE)
    assert not quote_found("ga = g * self.a\n", SOURCE)                 # changed code
    assert not quote_found("gb = g * self.a\nga = g * self.b\n", SOURCE)  # wrong order
    assert not quote_found("def backward(self, g):\nga = g * self.b\n", SOURCE)  # lost indent


def test_same_numbers_uses_the_digits_shown():
    assert same_numbers("1.03972", "1.0397") is None
    assert same_numbers("0.806782 -inf nan", "0.806782 -inf nan") is None
    assert same_numbers("1.0401", "1.0397") is not None
    assert same_numbers("1 2", "1 2 3") is not None
    assert same_numbers("inf", "-inf") is not None


def test_anchors_follow_github_and_explicit_ids():
    text = "# 1. Autograd: a tensor\n## 1.2 A worked example\n## 1.2 A worked example\n" \
           '<a id="exercise-1.2"></a>\n```python\n# not a heading\n```\n'
    assert anchors(text) == {"1-autograd-a-tensor", "12-a-worked-example",
                             "12-a-worked-example-1", "exercise-1.2"}
    assert github_slug("Exercise 1.2 — Mul.backward: the `product` rule") == \
        "exercise-12--mulbackward-the-product-rule"


def test_blocks_read_info_strings():
    found = blocks("text\n```python source=minigrad/x.py\ncode\n```\n```text\n1\n```\n")
    assert [b.lang for b in found] == ["python", "text"]
    assert found[0].options == {"source": "minigrad/x.py"} and found[0].text == "code\n"


def test_references_and_links_are_resolved(tmp_path):
    from .markdown import ROOT, broken_links, broken_references
    doc = tmp_path / "doc.md"
    doc.write_text(
        "`minigrad/autograd.py` `minigrad/autograd.py::unbroadcast` `Mul.backward` "
        "`nn.Linear(3, 4)` `minigrad.experiments.suite` `F.cross_entropy` `x.grad` "
        "`DistributedDataParallel.no_sync()`\n"
        "`minigrad/nowhere.py` `minigrad/autograd.py::nowhere` `Mul.nowhere` "
        "`optim.Nowhere` `benchmarks/results/results.json`\n"
        f"[ok]({ROOT / 'chapters' / '01_autograd.md'}#exercise-1.2) "
        f"[missing anchor]({ROOT / 'chapters' / '01_autograd.md'}#nowhere) "
        "[missing file](nowhere.md) [web](https://example.org) [self](#top)\n# Top\n")
    problems = broken_references(doc)
    assert len(problems) == 4, problems
    assert all(any(bad in p for p in problems) for bad in
               ("nowhere.py", "::nowhere", "Mul.nowhere", "optim.Nowhere"))
    links = broken_links(doc)
    assert len(links) == 2 and "nowhere" in links[0] and "nowhere.md" in links[1], links
