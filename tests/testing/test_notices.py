"""Notices reach the user inside pytest (issue 30 item 19): a first compile announced while a
test runs is shown at once, not swallowed by pytest's per-test capture of stderr."""

from __future__ import annotations

import pytest

from neuronemu import notices

pytest_plugins = ("pytester",)
PLUGIN = ("-p", "neuronemu.pytest_plugin", "-p", "no:cacheprovider")


def test_a_notice_inside_a_passing_test_is_shown(pytester):
    pytester.makepyfile(test_x="""
        from neuronemu import notices

        def test_compiles():
            notices.notify("neuronemu: compiling the code this kernel needs with numba")
            print("captured output that stays hidden")
    """)
    result = pytester.runpytest_subprocess(*PLUGIN, "-q")
    result.assert_outcomes(passed=1)
    shown = result.stdout.str() + result.stderr.str()
    assert "neuronemu: compiling the code this kernel needs with numba" in shown
    assert "captured output that stays hidden" not in shown     # the capture still works


def test_a_notice_leaves_a_tests_own_redirection_in_place(pytester):
    """A first compile inside CliRunner.invoke: the command's --json document printed after it
    reached pytest's capture instead of the runner's stdout (an empty result.stdout)."""
    pytester.makepyfile(test_x="""
        import click
        from click.testing import CliRunner
        from neuronemu import notices

        @click.command()
        def command():
            notices.notify("neuronemu: compiling the code this kernel needs with numba")
            click.echo("the document")

        def test_runner_keeps_its_output():
            assert CliRunner().invoke(command).stdout == "the document\\n"
    """)
    result = pytester.runpytest_subprocess(*PLUGIN, "-q")
    result.assert_outcomes(passed=1)


def test_the_compile_announcement_goes_through_the_notices(monkeypatch):
    from neuronemu.compiled import cache, compiling

    said: list[str] = []
    previous = notices.set_sink(said.append)
    try:
        monkeypatch.setattr(cache, "prune_old_caches", list)
        monkeypatch.setitem(compiling._state, "announced", False)
        compiling.announce("instruction kernels vector__tensor_tensor")
    finally:
        notices.set_sink(previous)
    assert len(said) == 1 and said[0].startswith(
        "neuronemu: compiling instruction kernels vector__tensor_tensor with numba")
    assert "10 s to a few minutes" in said[0] and f"cached in {cache.write_dir()}" in said[0]


@pytest.mark.parametrize("nested", [False, True])
def test_the_sink_is_put_back(nested):
    mine: list[str] = []
    previous = notices.set_sink(mine.append)
    if nested:
        inner = notices.set_sink(None)
        assert inner == mine.append
    notices.set_sink(previous)
    assert notices._sink is previous
