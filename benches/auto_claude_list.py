"""Run Auto-Claude's own `run.py --list` with stub modules standing in for the third-party
packages it imports but the listing never calls (the Claude SDK, ...), which are not installed
here. Usage: python3 list_driver.py <backend dir> <project dir>"""
import importlib.abc, importlib.machinery, sys, types

backend, project = sys.argv[1], sys.argv[2]
STUBBED = []
# The third-party packages the import chain of run.py needs and this machine lacks.
MISSING = set(sys.argv[3].split(",")) if len(sys.argv) > 3 else set()

class Anything(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return type(name, (), {"__init__": lambda self, *a, **k: None,
                               "__call__": lambda self, *a, **k: None})

class StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path, target=None):
        if fullname.split(".")[0] not in MISSING:
            return None
        for finder in sys.meta_path:
            if finder is self:
                continue
            try:
                spec = finder.find_spec(fullname, path, target)
            except Exception:
                spec = None
            if spec is not None:
                return None
        STUBBED.append(fullname)
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
    def create_module(self, spec):
        m = Anything(spec.name)
        m.__path__ = []
        return m
    def exec_module(self, module):
        pass

sys.meta_path.append(StubFinder())
sys.path.insert(0, backend)
sys.argv = [f"{backend}/run.py", "--list", "--project-dir", project]
import runpy
try:
    runpy.run_path(f"{backend}/run.py", run_name="__main__")
finally:
    print("stubbed modules:", ",".join(sorted(set(s.split('.')[0] for s in STUBBED))), file=sys.stderr)
