"""What every command shares: the settings as click options, the config file, bad input.

The options are made from the settings' declarations (``videvent.settings``): their flags,
types, bounds, defaults and help are not written twice.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from ..settings import (ALERT_SPECS, ALL_SPECS, CAMERA_SPECS, DEFAULTS, SPECS, TIME_HELP,
                        WATCH_DEFAULTS, WATCH_SPECS)
from ..settings import Settings, Spec, load_config, never_to_none, option_name


class BadInput(click.ClickException):
    """Bad input data: one line on stderr, exit code 1."""

    exit_code = 1

    def show(self, file=None) -> None:
        click.echo(f"videvent: error: {self.format_message()}", err=True)


def bad_input(error: ValueError) -> BadInput:
    return BadInput(str(error).splitlines()[0] if str(error) else type(error).__name__)


CONFIG_PATH = "videvent.config_path"
CONFIG_OPTIONS = "videvent.config_options"    # the commands' own options a config file may hold
# ``output-dir`` of the user's own config file (read without -c): not one result folder, which
# every run of another video would replace, but the folder each source's result folder goes
# into, as DVR-Scan's -d is the folder of every video's files.
OUT_PARENT = "videvent.out_parent"


def default_config_path() -> Path | None:
    """The user's own config file, read when ``-c`` is not given (the XDG place), if it exists."""
    folder = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    path = Path(folder) / "videvent" / "config.toml"
    return path if path.is_file() else None


# ``--help`` in groups: the everyday ones first, the detector's expert settings last. Each
# option's parameter name, in the group its help is shown in (any command's; an option in no
# group would be shown under "Other options", which a test forbids).
HELP_GROUPS: dict[str, tuple[str, ...]] = {
    "Options": ("help", "config", "quiet", "log_format"),
    "Input": ("start_time", "end_time", "duration", "max_frames", "fps", "realtime",
              "max_reconnects", "names", "scheduler", "workers", "chunk_minutes"),
    "Output": ("out", "out_dir", "export_video", "video", "video_path", "clips", "no_clips",
               "clip_template", "clip_mode", "overlay", "bounding_box", "no_plot", "json_lines",
               "show", "as_json", "as_csv", "keep", "max_disk"),
    "Which events": ("since", "until", "hours", "camera", "kind", "region"),
    "Sensitivity": ("threshold", "threshold_low", "min_event_length", "merge_gap",
                    "time_before_event", "time_post_event", "absorb_after"),
    "Regions": ("add_region", "load_region", "ignore_region", "mask"),
    "Alerts and MQTT": ("alert_on", "alert_regions", "on_event", "webhook", "mqtt", "mqtt_ca",
                        "mqtt_prefix", "mqtt_discovery"),
    "Dashboard": ("serve", "serve_token", "serve_token_file", "serve_cert", "serve_key",
                  "serve_health"),
    "Detector (expert)": ("method", "rank", "window", "background_span", "projection_dim",
                          "inlier_fraction", "blocks", "working_size", "downscale_factor",
                          "colour", "light_invariant", "seed", "start_reference", "refit_every",
                          "backend", "without", "compare"),
}
OTHER_OPTIONS = "Other options"


class GroupedCommand(click.Command):
    """A command whose ``--help`` shows its options in ``HELP_GROUPS``' groups and order."""

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        place = {name: (group, order) for group, names in HELP_GROUPS.items()
                 for order, name in enumerate(names)}
        help_option = self.get_help_option(ctx)
        rows: dict[str, list[tuple[int, tuple[str, str]]]] = {group: [] for group in HELP_GROUPS}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if not isinstance(param, click.Option) or record is None:
                continue
            group, order = place.get("help" if param is help_option else param.name,
                                     (OTHER_OPTIONS, 0))
            rows.setdefault(group, []).append((order, record))
        for group, records in rows.items():
            if records:
                with formatter.section(group):
                    formatter.write_dl([record for _, record in sorted(records,
                                                                        key=lambda r: r[0])])
        if any(param.name in SPECS and SPECS[param.name].kind == "time" for param in self.params):
            formatter.write_paragraph()
            formatter.write_text(f"A TIME is {TIME_HELP}.")


def _option_keys(command: click.Command) -> dict[str, str]:
    """The config keys of a command's own options (those not declared as settings): each long
    flag, underscored, to the option's parameter name."""
    keys = {}
    for param in command.params:
        if isinstance(param, click.Option) and param.expose_value and param.name not in ALL_SPECS:
            for flag in param.opts:
                if flag.startswith("--"):
                    keys[flag[2:].replace("-", "_")] = param.name
    return keys


def _load_config(ctx: click.Context, _param, path):
    """Eager ``-c`` callback: a TOML file's values become the defaults of the options (the
    user's default file when ``-c`` is not given). The file may also hold any option of the
    commands that read it (``output-dir``, ``quiet``...); one another command has is left to
    it, and a key no command knows is an error."""
    given = path is not None
    if path is None:
        path = default_config_path()
        if path is None:
            return None
    own = _option_keys(ctx.command)
    group = ctx.parent.command if ctx.parent is not None else None
    everyone = set(own)
    for command in getattr(group, "commands", {}).values():
        everyone |= set(_option_keys(command))
    try:
        values = load_config(path, frozenset(everyone))
        values = {own.get(name, name): value for name, value in values.items()
                  if name in ALL_SPECS or name in own}
        _check_own_options(ctx, values, path)
    except ValueError as error:
        if given:
            raise click.BadParameter(str(error), ctx=ctx, param_hint="'-c' / '--config'")
        # The user's own file, read without -c: the line names it (it does), not -c.
        raise click.UsageError(str(error), ctx=ctx) from None
    if not given and "out_dir" in values:   # run's and watch's -d (batch's is a parent)
        ctx.meta[OUT_PARENT] = values.pop("out_dir")
    ctx.default_map = {**(ctx.default_map or {}), **values}
    ctx.meta[CONFIG_PATH] = path   # watch reads its [cameras.NAME] tables
    ctx.meta[CONFIG_OPTIONS] = frozenset(everyone)
    return path


def _check_own_options(ctx: click.Context, values: dict, path) -> None:
    """ValueError naming the config file for a value of the command's own options (not
    settings: ``load_config`` checked those) that the option's type refuses; click would
    name the option alone, or fail inside (``quiet = 3``)."""
    params = {param.name: param for param in ctx.command.params}
    for name, value in values.items():
        param = params.get(name)
        if param is None or name in ALL_SPECS:
            continue
        key = option_name(name)
        if (isinstance(value, (dict, list)) or (isinstance(value, bool)
                                                and not getattr(param, "is_flag", False))):
            raise ValueError(f"config file '{path}': {key} cannot be {value!r}")
        try:
            param.process_value(ctx, value)
        except click.BadParameter as error:
            raise ValueError(f"config file '{path}': {key}: {error.message}") from None
        except (TypeError, AttributeError, ValueError):
            raise ValueError(f"config file '{path}': {key} cannot be {value!r}") from None


def _click_type(spec: Spec):
    if spec.kind == "choice":
        return click.Choice(spec.choices)
    if spec.kind == "int":
        return click.IntRange(None if spec.minimum is None else int(spec.minimum),
                              None if spec.maximum is None else int(spec.maximum),
                              min_open=spec.min_open)
    if spec.kind == "float":
        if spec.minimum is None and spec.maximum is None:
            return float
        return click.FloatRange(spec.minimum, spec.maximum, min_open=spec.min_open)
    return str


METAVARS = {"time": "TIME", "polygons": "POLYGON", "files": "FILE"}


class SettingOption(click.Option):
    """A setting's option: its help without the range of its values, which a value out of
    it is told (one line each, as ``--help`` in groups wants)."""

    def get_help_extra(self, ctx: click.Context):
        extra = super().get_help_extra(ctx)
        extra.pop("range", None)
        return extra


def setting_option(name: str):
    """The click option of one setting, from its declaration."""
    spec, default = ALL_SPECS[name], {**DEFAULTS, **WATCH_DEFAULTS}.get(name)
    long = "--" + option_name(name)
    help_text = spec.help + (f" In {spec.units}." if spec.units else "")
    flags = [spec.short, long] if spec.short else [long]
    if spec.kind == "bool":
        flags[-1] += f"/{spec.off_flag}"
        return click.option(*flags, name, cls=SettingOption, default=default,
                            show_default=True, help=help_text)
    return click.option(*flags, name, cls=SettingOption, type=_click_type(spec), default=default,
                        multiple=spec.kind in ("polygons", "files"),
                        metavar=spec.metavar or METAVARS.get(spec.kind),
                        show_default=default not in (None, ()), help=help_text)


def run_options(function):
    """The detector options shared by the commands that run it: ``-c`` and every setting."""
    options = [click.option("-c", "--config", type=click.Path(dir_okay=False), is_eager=True,
                            expose_value=False, callback=_load_config,
                            help="Settings file (default ~/.config/videvent/config.toml).")]
    options += [setting_option(name) for name in SPECS]
    for option in reversed(options):
        function = option(function)
    return function


def no_plot_option(function):
    """``--no-plot``, for every command that writes result folders."""
    return click.option("--no-plot", is_flag=True,
                        help="Skip residuals.png and report.html.")(
        function)


def watch_setting_options(function):
    """``watch``'s own settings (``WATCH_SPECS``: where its news go; ``ALERT_SPECS``: which
    events they are about; ``CAMERA_SPECS``: how long and how much of each camera's events it
    keeps), as options."""
    for name in reversed([*ALERT_SPECS, *WATCH_SPECS, *CAMERA_SPECS]):
        function = setting_option(name)(function)
    return function


def settings_from(options: dict) -> Settings:
    """Settings from parsed options (taken out of ``options``); a bad combination is a
    usage error (exit 2)."""
    values = {name: never_to_none(name, options.pop(name)) for name in list(options)
              if name in SPECS}
    try:
        settings = Settings(**values)
    except (TypeError, ValueError) as error:
        raise click.UsageError(str(error)) from None
    if settings.threshold < 1.0:
        # DVR-Scan's threshold (0.15 by default) is a share of pixels; ours is a z-score.
        click.echo(f"videvent: warning: --threshold {settings.threshold:g} is a robust z-score "
                   f"here (default {DEFAULTS['threshold']:g}); DVR-Scan's threshold is on "
                   "another scale, and below 1 nearly every frame is an event", err=True)
    return settings
