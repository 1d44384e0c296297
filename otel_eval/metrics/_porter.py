"""nltk's Porter stemmer (what rouge-score stems with), loaded without nltk's package ``__init__``.

``import nltk.stem.porter`` first runs ``nltk/__init__.py``, which imports most of nltk, numpy, and scipy and
scikit-learn when they are installed: ~0.25 s in a clean install, ~2 s beside scikit-learn, paid by every process that
scores a response. The stemmer itself needs four small nltk modules. :func:`porter_stemmer` executes exactly those
files of the installed nltk, as private module objects whose ``import nltk...`` statements resolve among themselves
(through the ``__import__`` of their own builtins); nothing is added to ``sys.modules``, so a later ``import nltk``
anywhere in the process is unaffected. Should that fail (a future nltk whose stemmer needs something from its package
``__init__``), the stemmer comes from the normal import: slower, same stems.
"""

from __future__ import annotations

import builtins
import contextlib
import importlib.util
import logging
import sys
import types
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

_NLTK = "nltk"


def porter_stemmer() -> Any:
    """A new ``nltk.stem.porter.PorterStemmer()`` (its default NLTK_EXTENSIONS mode, as rouge-score creates it)."""
    if _NLTK not in sys.modules:  # once nltk is imported, its own stemmer costs nothing more
        try:
            return _IsolatedNltk.find().module("nltk.stem.porter").PorterStemmer()
        except Exception:  # any failure here only costs the import time this module saves
            logger.debug("loading nltk's Porter stemmer on its own failed; importing nltk", exc_info=True)
    from nltk.stem import porter

    return porter.PorterStemmer()


class _IsolatedNltk:
    """Private module objects for files of the installed nltk package, importing ``nltk.*`` only among themselves."""

    def __init__(self, root: Path) -> None:
        self._root = root
        self._modules: dict[str, types.ModuleType] = {}
        self._builtins = {**vars(builtins), "__import__": self._import}

    @classmethod
    def find(cls) -> _IsolatedNltk:
        """For the nltk that ``import nltk`` would load (its package ``__init__`` is not run)."""
        spec = importlib.util.find_spec(_NLTK)
        if spec is None or not spec.submodule_search_locations:
            raise ImportError("nltk is not installed")
        return cls(Path(next(iter(spec.submodule_search_locations))))

    def module(self, name: str) -> types.ModuleType:
        """The private module ``name`` (``nltk`` or ``nltk.<...>``), executing its file on first use; packages are
        empty namespaces whose ``__init__`` is not run."""
        found = self._modules.get(name)
        if found is not None:
            return found
        parent_name, _, child = name.rpartition(".")
        parent = self.module(parent_name) if parent_name else None
        location = self._root.joinpath(*name.split(".")[1:])
        if location.is_dir():
            module = types.ModuleType(name)
            module.__path__ = [str(location)]
            self._modules[name] = module
        else:
            source = location.with_suffix(".py")
            spec = importlib.util.spec_from_file_location(name, source) if source.is_file() else None
            if spec is None or spec.loader is None:
                raise ImportError(f"no module {name} in {self._root}", name=name)
            module = importlib.util.module_from_spec(spec)
            module.__dict__["__builtins__"] = self._builtins
            self._modules[name] = module
            spec.loader.exec_module(module)
        if parent is not None:
            setattr(parent, child, module)
        return module

    def _import(
        self,
        name: str,
        globals: Mapping[str, object] | None = None,
        locals: Mapping[str, object] | None = None,
        fromlist: Sequence[str] | None = (),
        level: int = 0,
    ) -> types.ModuleType:
        if level != 0 or (name != _NLTK and not name.startswith(f"{_NLTK}.")):
            return builtins.__import__(name, globals, locals, fromlist or (), level)
        leaf = self.module(name)
        if not fromlist:
            return self.module(_NLTK)  # ``import nltk.x`` binds ``nltk``
        for item in fromlist:
            if not hasattr(leaf, item) and hasattr(leaf, "__path__"):
                # ``from nltk import redos`` names a submodule; for a name that is none, ``from`` raises "cannot
                # import name", as Python's own import does.
                with contextlib.suppress(ImportError):
                    self.module(f"{name}.{item}")
        return leaf
