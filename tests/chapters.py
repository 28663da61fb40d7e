"""Which chapter of the course each test belongs to.

A test belongs to the chapter of the latest material it uses: a chapter-1
test uses only autograd and the chapter-1 functions, never ``nn.Linear``
(chapter 2) or an optimizer (chapter 3).  So blanking the exercises of
chapter N (``make student CHAPTERS=N-``) leaves every test of the chapters
before N passing, and ``make selftest`` checks exactly that.

Chapter 0 holds what needs no exercise at all: the data sets, the command
line's argument checks, the tooling.  The plugin (tools/course_plugin.py) adds
the marker ``chapterNN`` to every test from the longest matching entry of
``PATHS`` (a file or folder) and ``TESTS`` (one test, overriding its file).
A test file missing here gets no chapter and is named in the summary.
"""

PATHS = {
    "tools/tests/": 0,
    "tests/data/": 0,                  # the data sets and the loader need no exercise
    "tests/test_backend.py": 0,
    "tests/test_cli.py": 0,            # the command line's argument checks
    "tests/test_benchmarks.py": 0,
    "tests/test_autograd.py": 1,
    "tests/test_tensor.py": 1,
    "tests/test_gradcheck.py": 1,
    "tests/functions/": 1,
    "tests/functions/test_softmax.py": 2,
    "tests/nn/": 2,
    "tests/optim/": 3,
    "tests/optim/test_accumulation.py": 4,
    "tests/optim/test_accumulation_equivalence.py": 4,
    "tests/experiments/": 4,
    "tests/experiments/test_sampling.py": 8,
    "tests/test_checkpoint.py": 7,
    "tests/test_memory.py": 7,
    "tests/exercises/test_ch01.py": 1,
    "tests/exercises/test_ch02.py": 2,
    "tests/exercises/test_ch03.py": 3,
    "tests/exercises/test_ch04.py": 4,
    "tests/exercises/test_ch05.py": 5,
    "tests/exercises/test_ch06.py": 6,
    "tests/exercises/test_ch07.py": 7,
    "tests/exercises/test_ch08.py": 8,
    "tests/exercises/test_ch09.py": 9,
    "tests/exercises/test_ch10.py": 10,
    "tests/exercises/test_ch11.py": 11,
    "tests/docs/": 0,                  # per chapter file: TESTS below
    "tests/site/": 0,
    "tests/test_setup.py": 0,
    "tests/test_chapter_figures.py": 0,
    "tests/test_testing.py": 1,
    "tests/test_backward_driver.py": 1,
    "tests/test_grad_mode_threads.py": 1,
    "tests/test_inplace.py": 1,
    "tests/test_inplace_aliasing.py": 1,
    "tests/test_dtypes.py": 1,
    "tests/test_empty_tensors.py": 1,
    "tests/test_numpy_interop.py": 1,
    "tests/test_pytorch_names.py": 2,   # nll_loss and cross_entropy too
    "tests/test_serialization.py": 3,
    "tests/test_checkpoint_context.py": 7,
    "tests/test_gpu_kernels.py": 9,
    "tests/test_distributed.py": 10,
    "tests/pipeline/": 11,
    "tests/functions/test_blocked_gradients.py": 2,   # ReLU, dropout, embedding, cross-entropy
    "tests/nn/test_exact_batchnorm.py": 6,            # the window's statistics (6.3, 6.4)
    "tests/optim/test_precision.py": 12,
    "tests/experiments/test_precision.py": 12,
    "tests/test_memory_plan.py": 12,
    "tests/exercises/test_ch12.py": 12,
}

# Tests parametrized by a chapter's file (the docs run each chapter's code
# blocks and find its quotes in the library): the chapter is the number in
# the parameter, chapters/NN_*.md or chapters/answers/NN.md.
BY_PARAMETER = {"tests/docs/": r"^\[chapters/(?:answers/)?(\d{2})"}

# Tests that use later material than the rest of their file: the exercises
# named are the stubs a test reached (make selftest checks the tags).
TESTS = {
    "tests/test_inplace.py::test_an_optimizer_step_counts_as_an_in_place_change": 3,  # SGD
    "tests/optim/test_all_or_nothing.py::test_a_parameter_replaced_after_the_state_was_made_updates_nothing": 4,
    "tests/data/test_loader.py::test_split_a_tuple_keeps_pairs_aligned": 4,  # 4.2
    "tests/data/test_loader.py::test_split_loader_batch_of_tensors": 4,  # 4.2
    "tests/data/test_loader.py::test_split_properties": 4,  # 4.2
    "tests/data/test_loader.py::test_split_sizes_follow_array_split": 4,  # 4.2
    "tests/data/test_loader.py::test_split_tensor_parts_carry_gradients": 4,  # 4.2
    "tests/data/test_loader.py::test_split_tuple_properties": 4,  # 4.2
    "tests/data/test_text.py::test_empty_inputs": 8,  # 8.1
    "tests/data/test_text.py::test_make_lm_batch_known_values": 5,  # 5.4
    "tests/data/test_text.py::test_make_lm_batch_properties": 5,  # 5.4
    "tests/data/test_text.py::test_roundtrip_any_text": 8,  # 8.1
    "tests/data/test_text.py::test_sampled_windows_feed_make_lm_batch": 8,  # 8.1
    "tests/data/test_text.py::test_shakespeare_roundtrip": 8,  # 8.1
    "tests/data/test_text.py::test_unknown_character_is_named": 8,  # 8.1
    "tests/data/test_text.py::test_vocab_is_sorted_and_ids_follow_it": 8,  # 8.1
    "tests/experiments/test_cases.py::test_char_lm_token_count_vs_micro_batch_mean": 8,  # 8.1
    "tests/experiments/test_cases.py::test_merged_running_statistics": 6,  # 2.9, 3.9, 6.3
    "tests/experiments/test_cases.py::test_train_short_last_window_and_shakespeare": 8,  # 8.1
    "tests/functions/test_elementwise.py::test_abs_and_relu_derivative_at_zero_is_zero": 2,  # 1.8, 2.1
    "tests/functions/test_elementwise.py::test_float32_stays_float32": 2,  # 1.8, 2.1, 2.2
    "tests/functions/test_elementwise.py::test_parity_with_torch": 2,  # 1.8, 2.1, 2.2
    "tests/functions/test_elementwise.py::test_sigmoid_float32_extremes": 2,  # 2.2
    "tests/functions/test_elementwise.py::test_tanh_sigmoid_saturate_without_warnings": 2,  # 1.8, 2.2
    "tests/functions/test_elementwise.py::test_unary_gradcheck": 2,  # 1.8, 2.1, 2.2
    "tests/functions/test_softmax.py::test_float32_stays_float32_and_is_exact_at_large_logits": 4,  # 1.8, 2.4, 4.1
    "tests/nn/test_batchnorm.py::test_batchnorm_matches_pytorch_over_steps": 4,  # 1.8, 2.10, 2.11, 4.1
    "tests/nn/test_batchnorm.py::test_merged_equals_full_batch": 6,  # 2.11, 6.3
    "tests/nn/test_batchnorm.py::test_merged_forward_still_uses_micro_batch_statistics": 6,  # 2.11, 6.3
    "tests/nn/test_batchnorm.py::test_model_helpers": 6,  # 6.3
    "tests/nn/test_batchnorm.py::test_pending_stats_save_and_restore_mid_window": 6,  # 6.3
    "tests/nn/test_batchnorm.py::test_worked_example_merged_vs_per_micro_batch": 6,  # 2.11, 6.3
    "tests/nn/test_dropout.py::test_per_example_model_gradients_equal_under_accumulation": 4,  # 2.8, 4.1
    "tests/nn/test_pooling.py::test_pool_keeps_float32": 4,  # 1.8, 4.1
    "tests/optim/test_accumulation.py::test_classic_mode_divides_by_the_micro_batches_in_the_window": 5,  # 2.9, 3.9, 4.3, 5.1
    "tests/optim/test_accumulation.py::test_counters_and_return_values": 5,  # 2.9, 3.9, 4.3, 5.1
    "tests/optim/test_accumulation.py::test_docstring_example_runs": 5,
    "tests/optim/test_accumulation.py::test_non_finite_gradient_skips_the_window": 5,  # 3.9, 4.3, 5.3
    "tests/optim/test_accumulation.py::test_non_finite_loss_skips_the_whole_window": 5,  # 2.9, 3.6, 4.3, 5.3
    "tests/optim/test_accumulation.py::test_resume_keeps_pending_batchnorm_statistics": 6,  # 2.9, 3.8, 6.3
    "tests/optim/test_accumulation.py::test_resume_without_the_pending_statistics_differs": 6,  # 2.9, 3.9, 6.3
    "tests/optim/test_accumulation.py::test_skipped_window_drops_pending_batchnorm_statistics": 6,  # 2.9, 3.9, 6.3
    "tests/optim/test_accumulation.py::test_stopping_mid_window_and_resuming_gives_the_same_parameters": 5,  # 2.9, 3.8, 4.3, 5.1
    "tests/optim/test_accumulation_equivalence.py::test_every_token_gets_weight_one_over_110": 5,  # 5.4
    "tests/optim/test_accumulation_equivalence.py::test_merged_running_statistics_equal_full_batch_steps": 6,  # 2.9, 3.9, 4.2, 6.3
    "tests/optim/test_accumulation_equivalence.py::test_merged_running_statistics_of_one_window_are_exact": 6,  # 2.9, 3.9, 4.2, 6.3
    "tests/optim/test_accumulation_equivalence.py::test_merged_running_statistics_worked_example": 6,  # 2.9, 3.9, 6.3
    "tests/optim/test_accumulation_equivalence.py::test_short_final_window_is_normalized_by_what_it_holds": 5,  # 4.2, 5.1
    "tests/optim/test_accumulation_equivalence.py::test_token_level_cross_entropy_over_padded_sequences": 8,  # 8.1
    "tests/optim/test_hooks.py::test_pre_hook_sees_the_window_gradient_once_per_update": 4,  # 3.9, 4.3
    "tests/test_autograd.py::test_backward_adds_into_leaf_grad": 4,  # 1.8, 4.1
    "tests/test_autograd.py::test_gradient_kept_by_a_retained_graph_is_copied": 4,  # 1.8, 4.1
    "tests/test_autograd.py::test_retain_graph_exactly_doubles_leaf_gradients": 4,  # 1.8, 4.1
    "tests/test_backend.py::test_cuda_without_a_gpu_is_a_clear_error": 9,  # 9.1
    "tests/test_cli.py::test_train_one_tiny_epoch": 4,  # 2.9
    "tests/test_cli.py::test_train_writes_a_plot_with_the_full_batch_curve": 8,  # 8.1
    "tests/test_cli.py::test_verify_plots": 8,
    "tests/test_cli.py::test_verify_quick_json": 8,  # 2.9, 3.9, 4.3, 6.3, 8.1
    "tests/test_memory.py::test_peak_on_cuda_without_gpu_raises": 9,  # 9.1
    "tests/docs/test_chapters.py::test_python_blocks_run_and_show_their_numbers"
    "[chapters/01_autograd.md]": 4,  # 4.1: backward adds into .grad
    "tests/test_backward_driver.py::test_accumulated_window_peaks_at_one_step_plus_one_gradient": 4,
    "tests/test_backward_driver.py::test_two_passes_add_in_the_same_order_as_one_summed_gradient": 4,
    "tests/test_chapter_figures.py::test_checkpoint_counts_match_the_graph": 7,
    "tests/test_dtypes.py::test_floating_functions_of_integers_use_the_default_dtype": 2,
    "tests/test_dtypes.py::test_layer_rejects_an_input_of_another_dtype": 2,
    "tests/test_dtypes.py::test_other_floating_functions_of_integers": 2,
    "tests/test_empty_tensors.py::test_losses_on_a_batch_of_0": 2,
    "tests/test_empty_tensors.py::test_softmax_along_a_length_0_axis": 2,
    "tests/test_empty_tensors.py::test_layers_on_a_batch_of_0": 4,
    "tests/test_empty_tensors.py::test_batchnorm_empty_micro_batch_with_merged_statistics": 6,
    "tests/test_inplace.py::test_sgd_loop_written_by_hand_updates_the_model": 2,
    "tests/test_inplace.py::test_optimizers_still_exact_after_in_place_updates": 3,
    "tests/test_inplace.py::test_change_after_backward_is_fine": 4,
    "tests/test_inplace.py::test_good_grad_assignment_reaches_the_optimizer_and_accumulator": 4,
    "tests/test_inplace.py::test_checkpointed_segment_input_changed_before_backward_raises": 7,
    "tests/test_serialization.py::test_training_resumed_from_disk_mid_window_is_bit_identical": 6,
    "tests/functions/test_blocked_gradients.py::test_sqrt_of_relu_through_the_accumulator_updates": 4,
    "tests/nn/test_exact_batchnorm.py::test_eval_mode_is_one_plain_pass": 4,
    "tests/nn/test_exact_batchnorm.py::test_checkpointed_segments": 7,
    "tests/nn/test_losses_weighted.py::test_weighted_accumulation_with_float_num_items": 4,
    "tests/optim/test_all_or_nothing.py::test_a_bad_rate_at_the_update_changes_nothing_and_a_retry_continues": 4,
    "tests/optim/test_all_or_nothing.py::test_a_raising_lr_lambda_changes_nothing_and_a_retry_continues": 4,
    "tests/optim/test_all_or_nothing.py::test_a_state_saved_between_a_failure_and_the_retry_resumes_exactly": 4,
    "tests/optim/test_all_or_nothing.py::test_an_optimizer_failing_halfway_inside_the_accumulator": 5,
    "tests/optim/test_all_or_nothing.py::test_accumulator_load_is_all_or_nothing": 6,
    "tests/optim/test_zero_items.py::test_empty_micro_batch_counts_and_update_equals_full_batch": 4,
    "tests/optim/test_zero_items.py::test_flush_of_an_empty_short_window_is_skipped": 5,
    "tests/optim/test_zero_items.py::test_window_without_any_item_is_skipped_with_a_warning": 5,
    "tests/test_cli.py::test_train_counts_skipped_windows_apart_from_updates": 5,  # 5.3
    "tests/test_cli.py::test_train_exits_1_when_no_update_was_made": 5,  # 5.3
}
