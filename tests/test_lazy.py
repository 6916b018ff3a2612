"""keras_pretrain.lazy: a module `__getattr__` that imports a name's home when first asked."""

import sys
import types

import pytest

from keras_pretrain import lazy


@pytest.mark.one_backend
def test_names_resolve_from_their_homes_and_others_raise():
    getattr_ = lazy.attributes("somewhere", {"dumps": "json", "path_join": "os.path:join", "json": "json:"})
    import json
    import os.path

    assert getattr_("dumps") is json.dumps
    assert getattr_("path_join") is os.path.join
    assert getattr_("json") is json
    with pytest.raises(AttributeError, match="module 'somewhere' has no attribute 'loads'"):
        getattr_("loads")


@pytest.mark.one_backend
def test_a_module_serves_its_moved_names(monkeypatch):
    module = types.ModuleType("old_home")
    module.__getattr__ = lazy.attributes("old_home", lazy.from_module("os.path", ["join", "path"]))
    monkeypatch.setitem(sys.modules, "old_home", module)
    from old_home import join  # noqa: E402 (the `from` form goes through the module's __getattr__)

    import os.path

    assert join is os.path.join
    assert module.path is os.path
