"""attnlab.checks.mistakes, the former home of the mistake models: chapter 5 still imports two of them from it."""
def test_the_former_home_of_the_mistake_models_still_gives_chapter_5_its_two():
    from attnlab.checks import backward, mistakes

    assert mistakes.backward_dk_untransposed is backward.backward_dk_untransposed
    assert mistakes.backward_without_scale is backward.backward_without_scale
