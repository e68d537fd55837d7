"""How the ``neuronemu`` commands fail: a NeuronemuError rendered once with its exit code (after
the kernel's warnings), a usage error under ``--json`` as a JSON document too, Ctrl-C anywhere as
exit 130. Click plumbing, kept apart from the commands in cli.py."""

from __future__ import annotations

import json
from collections.abc import Iterable

import click

from neuronemu import report
from neuronemu.errors import Interrupted, Reported
from neuronemu.multichip.comm import partition_number


class Failure(click.ClickException):
    """Carries a NeuronemuError out of a command with its exit code, rendered once, after the
    kernel's assembler warnings (they may be the failure's cause: an integer division, say)."""

    def __init__(self, error: Reported, as_json: bool, warnings: Iterable = ()):
        super().__init__(error.message)
        self.error = error
        self.exit_code = error.exit_code
        self.as_json = as_json
        self.warnings = list(warnings)

    def show(self, file=None) -> None:
        if partition_number() != 0:
            return   # every MPI partition raises the same error; partition 0 reports it
        if self.as_json:
            click.echo(json.dumps(report.error_document(self.error, self.warnings), indent=2))
        echo_warnings(self.warnings)
        click.echo(self.error.render(), err=True)


def echo_warnings(warnings: Iterable) -> None:
    for warning in warnings:
        click.echo(warning.render(), err=True)


class JsonUsageError(click.UsageError):
    """A usage error under --json: the error document on stdout too, as for every other error,
    so a caller that parses stdout always gets one JSON document."""

    def __init__(self, error: click.UsageError):
        super().__init__(error.format_message(), error.ctx)
        self.error = error
        self.exit_code = error.exit_code

    def show(self, file=None) -> None:
        param = getattr(self.error, "param", None)
        hint = getattr(self.error, "param_hint", None)
        option = (param.opts[0] if param is not None and getattr(param, "opts", None) else
                  hint.split("/")[0].strip(" '\"") if isinstance(hint, str) else None)
        doc = report.usage_error_document(self.error.format_message(), self.exit_code, option)
        click.echo(json.dumps(doc, indent=2))
        self.error.show(file)


class Group(click.Group):
    """Turns click's usage errors into JsonUsageError when the command line asks for --json."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        options = args[:args.index("--")] if "--" in args else args
        ctx.meta["neuronemu.json"] = "--json" in options
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as e:
            # Ctrl-C in any command: the run's own Interrupted (with where the run was), or
            # one outside the instruction loop (assembling, compiling, grading, writing);
            # files are written all-or-none, so nothing was
            error = e if isinstance(e, Interrupted) else Interrupted(
                "interrupted (Ctrl-C); nothing was written", limit="interrupt")
            raise Failure(error, bool(ctx.meta.get("neuronemu.json"))) from None
        except click.UsageError as e:
            if ctx.meta.get("neuronemu.json") and not isinstance(e, JsonUsageError):
                raise JsonUsageError(e) from None
            raise
