"""The plugin host: loads built-in and third-party plugins and holds what they registered.

Loading is lazy and happens once per host (`get_host()`), never at import time.  Built-ins are listed in
`DEFAULT_PLUGINS` and go through exactly the same path as third-party plugins, which come from

* the `tritongym` entry-point group of installed distributions (`TRITONGYM_LOAD_PLUGINS` selects which,
  by distribution or entry-point name, comma separated; set it empty to load none: the way out when an
  installed plugin breaks start-up),
* `--plugin module.or.file.py` on the command line, and
* `TRITONGYM_PLUGINS` (comma separated modules or .py files).

A plugin that fails to import, implements an unknown hook, or raises while registering is reported by
name and skipped; with `strict=True` (or `TRITONGYM_STRICT_PLUGINS=1`) it is fatal.  Two objects of the
same kind and name are always an error naming both plugins.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import re
import sys
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pluggy

from tritongym.core import hookspecs
from tritongym.core.errors import PluginError, UnknownPluginObject
from tritongym.core.interfaces import HOOK_OF_KIND, KINDS, PluginObject

DEFAULT_PLUGINS: tuple[str, ...] = (
    "tritongym.plugins.backends.triton_cpu",
    "tritongym.plugins.backends.triton_cuda",
    "tritongym.plugins.checks.structure",
    "tritongym.plugins.checks.forbidden",
    "tritongym.plugins.checks.monkeypatch",
    "tritongym.plugins.checks.inheritance",
    "tritongym.plugins.checks.tensor_subclass",
    "tritongym.plugins.checks.streams",
    "tritongym.plugins.checks.fallback",
    "tritongym.plugins.checks.precision",
    "tritongym.plugins.checks.overflow",
    "tritongym.plugins.checks.launches",
    "tritongym.plugins.checks.modes",
    "tritongym.plugins.checks.ghost",
    "tritongym.plugins.checks.degenerate",
    "tritongym.plugins.checks.caching",
    "tritongym.plugins.checks.determinism",
    "tritongym.plugins.checks.environment",
    "tritongym.plugins.checks.side_work",
    "tritongym.plugins.checks.precomputed",
    "tritongym.plugins.checks.torch_compute",
    "tritongym.plugins.checks.host_compute",
    "tritongym.plugins.checks.timing",
    "tritongym.plugins.checks.llm_judge",
    "tritongym.plugins.rewards.correctness",
    "tritongym.plugins.rewards.speedup",
    "tritongym.plugins.rewards.profiling",
    "tritongym.plugins.estimators.grpo",
    "tritongym.plugins.estimators.rloo",
    "tritongym.plugins.estimators.trloo",
    "tritongym.plugins.estimators.reinforce",
    "tritongym.plugins.estimators.hrd",
    "tritongym.plugins.estimators.mrs",
    "tritongym.plugins.estimators.prs",
    "tritongym.plugins.estimators.meaningful_turn",
    "tritongym.plugins.estimators.low_variance_group",
    "tritongym.plugins.engines.transformers_engine",
    "tritongym.plugins.engines.vllm_engine",
    "tritongym.plugins.engines.openai_engine",
    "tritongym.plugins.strategies.exhaustive",
    "tritongym.plugins.strategies.random_search",
    "tritongym.plugins.probes.builtin",
    "tritongym.plugins.probes.shifted",
    "tritongym.plugins.probes.nudged",
    "tritongym.plugins.probes.host_reads",
)
"""Built-in plugins, registered like any third-party plugin."""

_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")
_TARGET_RE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*$")


class PluginWarning(UserWarning):
    """A plugin was skipped; the message names it and why."""


@dataclass(frozen=True)
class Registered:
    """One object a plugin registered: its kind, name, class and the plugin that provided it."""

    kind: str
    name: str
    cls: type[PluginObject]
    plugin: str

    @property
    def doc(self) -> str:
        return self.cls.summary()

    @property
    def options(self) -> list[dict]:
        """The object's options as `tritongym plugins` shows them: name, type, default and description."""
        out = []
        for name, info in self.cls.Options.model_fields.items():
            default = None if info.is_required() else info.get_default(call_default_factory=True)
            annotation = info.annotation
            type_name = getattr(annotation, "__name__", None) if isinstance(annotation, type) else None
            out.append(
                {
                    "name": name,
                    "type": type_name or str(annotation).replace("typing.", ""),
                    "default": default,
                    "required": info.is_required(),
                    "description": info.description or "",
                }
            )
        return out


class PluginHost:
    """Owns a pluggy manager and the merged, validated registry of named plugin objects."""

    def __init__(
        self,
        *,
        extra_plugins: Sequence[str] = (),
        load_entry_points: bool = True,
        strict: bool = False,
        builtins: Sequence[str] = DEFAULT_PLUGINS,
    ) -> None:
        self.pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
        self.pm.add_hookspecs(hookspecs)
        self.strict = strict
        self.extra_plugins = list(extra_plugins)
        self.load_entry_points = load_entry_points
        self.builtins = tuple(builtins)
        self.skipped: list[str] = []
        self._objects: dict[str, dict[str, Registered]] = {kind: {} for kind in KINDS}
        self._trace = self.pm.trace.root.get("tritongym")  # writes nothing until a writer is set
        if os.environ.get("TRITONGYM_TRACE_HOOKS", "") not in ("", "0"):
            self.pm.trace.root.setwriter(lambda msg: print(msg, end="", file=sys.stderr))
            self.pm.enable_tracing()
        for module_name in builtins:
            self._register_plugin(module_name, lambda m=module_name: importlib.import_module(m))
        if load_entry_points:
            self._load_entry_points()
        for spec in extra_plugins:
            self._register_plugin(spec, lambda s=spec: _import_plugin(s))
        self._collect()

    def recipe(self) -> dict:
        """The keyword arguments that build this same host in another process (a Ray actor): plugin files
        named by absolute path, so the other process finds them whatever its working directory."""
        extra = [str(Path(s).resolve()) if s.endswith(".py") or Path(s).exists() else s for s in self.extra_plugins]
        return {
            "extra_plugins": extra,
            "load_entry_points": self.load_entry_points,
            "strict": self.strict,
            "builtins": list(self.builtins),
        }

    # --- loading ---------------------------------------------------------------------------------------

    def _fail(self, plugin: str, why: str) -> None:
        message = f"plugin '{plugin}' {why}"
        if self.strict:
            raise PluginError(message)
        self.skipped.append(message)
        warnings.warn(
            f"{message}; skipped (set TRITONGYM_LOAD_PLUGINS= to disable installed plugins)",
            PluginWarning,
            stacklevel=3,
        )

    def _register_plugin(self, name: str, load) -> None:
        try:
            module = load()
        except Exception as exc:  # a third-party import can raise anything
            self._fail(name, f"failed to import: {type(exc).__name__}: {exc}")
            return
        if self.pm.is_registered(module) or self.pm.has_plugin(name):
            return
        try:
            self.pm.register(module, name=name)
        except pluggy.PluginValidationError as exc:
            self._fail(name, f"is invalid: {exc}")
            return
        try:
            self.pm.check_pending()
        except pluggy.PluginValidationError as exc:
            self.pm.unregister(name=name)
            self._fail(name, f"implements an unknown hook ({exc}); known hooks: {', '.join(HOOK_OF_KIND.values())}")

    def _load_entry_points(self) -> None:
        selected = os.environ.get("TRITONGYM_LOAD_PLUGINS")
        wanted = None if selected is None else {s.strip() for s in selected.split(",") if s.strip()}
        for ep in importlib.metadata.entry_points(group=hookspecs.PROJECT_NAME):
            dist = ep.dist.name if ep.dist is not None else ep.name
            if wanted is not None and dist not in wanted and ep.name not in wanted:
                continue
            self._register_plugin(f"{dist}:{ep.name}", ep.load)

    def _collect(self) -> None:
        """Call each registration hook implementation one by one, so every object knows its plugin.

        Each call goes through pluggy (a hook caller holding that one plugin), never to the function
        itself: pluggy's hook-call monitoring, and so `TRITONGYM_TRACE_HOOKS=1`, sees every call."""
        plugins = self.pm.get_plugins()
        for kind, hook_name in HOOK_OF_KIND.items():
            for impl in getattr(self.pm.hook, hook_name).get_hookimpls():
                plugin = impl.plugin_name
                only = self.pm.subset_hook_caller(hook_name, remove_plugins=plugins - {impl.plugin})
                self._trace(f"{hook_name} of plugin '{plugin}'")
                try:
                    only(register=lambda cls, k=kind, p=plugin: self._add(k, cls, p))
                except PluginError:
                    raise
                except Exception as exc:
                    self._fail(plugin, f"raised in {hook_name}: {type(exc).__name__}: {exc}")

    def _add(self, kind: str, cls: type, plugin: str) -> None:
        base = KINDS[kind]
        if not (isinstance(cls, type) and issubclass(cls, base)):
            self._fail(plugin, f"registered {cls!r} as a {kind}, but it is not a subclass of {base.__name__}")
            return
        name = getattr(cls, "name", "")
        if not isinstance(name, str) or not _NAME_RE.match(name):
            self._fail(
                plugin,
                f"registered {kind} class {cls.__name__} with an invalid name {name!r} "
                "(use lower-case letters, digits, '-', '_' or '.')",
            )
            return
        if kind == "probe" and not self._valid_probe(cls, name, plugin):
            return
        existing = self._objects[kind].get(name)
        if existing is not None:
            raise PluginError(
                f"{kind} '{name}' is registered twice: by plugin '{existing.plugin}' and by plugin "
                f"'{plugin}'; rename one or disable a plugin"
            )
        self._objects[kind][name] = Registered(kind, name, cls, plugin)

    def _valid_probe(self, cls: type, name: str, plugin: str) -> bool:
        """A built-in probe names a hard-wired implementation and no function; any other names its functions as
        'package.module:function' and takes no built-in's name (the worker tells the two apart by it)."""
        from tritongym.core.worker_task import BUILTIN_PROBES

        if getattr(cls, "builtin", False):
            if name not in BUILTIN_PROBES or cls.target or cls.reference:
                self._fail(
                    plugin,
                    f"registered probe '{name}' as built-in; only {', '.join(BUILTIN_PROBES)} are built in, and "
                    "they name no target or reference: register a plugin probe with builtin = False",
                )
                return False
            return True
        if name in BUILTIN_PROBES:
            self._fail(plugin, f"registered probe '{name}', the name of a built-in probe; choose another name")
            return False
        for field, required in (("target", True), ("reference", False)):
            value = getattr(cls, field, "")
            if not isinstance(value, str) or (value or required) and not _TARGET_RE.match(value):
                self._fail(
                    plugin,
                    f"registered probe '{name}' with {field} {value!r}; name the function the "
                    f"{'worker' if field == 'target' else 'trusted side'} calls as 'package.module:function', "
                    "importable from the parent's PYTHONPATH",
                )
                return False
        return True

    # --- lookup ----------------------------------------------------------------------------------------

    def all(self) -> list[Registered]:
        return [reg for kind in KINDS for reg in sorted(self._objects[kind].values(), key=lambda r: r.name)]

    def names(self, kind: str) -> list[str]:
        return sorted(self._objects[kind])

    def get(self, kind: str, name: str) -> Registered:
        try:
            return self._objects[kind][name]
        except KeyError:
            known = ", ".join(self.names(kind)) or "none"
            raise UnknownPluginObject(
                f"no {kind} named '{name}' is registered (known: {known}); install or --plugin the plugin "
                "that provides it"
            ) from None

    def create(self, kind: str, name: str, options: dict | None = None):
        """Instantiate a registered object with validated options."""
        return self.get(kind, name).cls.from_options(options)


def _import_plugin(spec: str) -> ModuleType:
    """Import a plugin given as a dotted module name or a path to a .py file."""
    path = Path(spec)
    if spec.endswith(".py") or path.exists():
        if not path.is_file():
            raise FileNotFoundError(f"no such plugin file: {spec}")
        module_name = "tritongym_plugin_" + re.sub(r"\W", "_", str(path.resolve()))
        module_spec = importlib.util.spec_from_file_location(module_name, path)
        assert module_spec is not None and module_spec.loader is not None  # a .py file always has a loader
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[module_name] = module
        try:
            module_spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[module_name]
            raise
        return module
    return importlib.import_module(spec)


def _env_list(name: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, "").split(",") if item.strip()]


_host: PluginHost | None = None


def get_host(extra_plugins: Iterable[str] = (), strict: bool | None = None) -> PluginHost:
    """The process-wide host, built on first use from the environment plus `extra_plugins`.

    Asking again with new extra plugins rebuilds it, so the CLI's `--plugin` always takes effect.
    """
    global _host
    extra = [*_env_list("TRITONGYM_PLUGINS"), *extra_plugins]
    if strict is None:
        strict = os.environ.get("TRITONGYM_STRICT_PLUGINS", "") not in ("", "0")
    if _host is None or _host.extra_plugins != extra or _host.strict != strict:
        _host = PluginHost(extra_plugins=extra, strict=strict)
    return _host


def reset_host() -> None:
    """Forget the process-wide host (tests, or after changing TRITONGYM_* variables)."""
    global _host
    _host = None
