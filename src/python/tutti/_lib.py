"""_lib.py - loading libtutti.so with ctypes and declaring the C functions the package calls.

Where the library comes from, first match wins: the file named by TUTTI_LIBRARY; a
libtutti.so beside this package (pip install: pyproject.toml puts it there); the libdir meson
install put it in (_paths.py, written at install: relative to this directory); the dynamic
loader's own search for libtutti.so.0 (LD_LIBRARY_PATH, ld.so.cache).
"""
import ctypes
import ctypes.util
import os

_HERE = os.path.dirname(os.path.abspath(__file__))

# tutti/status.h, in order of value: 0 and 1, then the errors from -1 down.
STATUS_NAMES = {
    0: "OK", 1: "IN_PROGRESS", -1: "ERR_INVALID_ARG", -2: "ERR_INVALID_USAGE",
    -3: "ERR_NO_MEMORY", -4: "ERR_SYSTEM", -5: "ERR_CUDA", -6: "ERR_REMOTE", -7: "ERR_TIMEOUT",
    -8: "ERR_AUTH", -9: "ERR_UNSUPPORTED", -10: "ERR_ABORTED", -11: "ERR_INTERNAL",
    -12: "ERR_MISMATCH",
}

COMM_PARAM_TIMEOUT = 1 << 0  # tutti_comm_params_t.field_mask bits
COMM_PARAM_NCHANNELS = 1 << 1


class UniqueIdStruct(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * 128)]


class CommParams(ctypes.Structure):
    _fields_ = [("field_mask", ctypes.c_uint64), ("timeout_ms", ctypes.c_int),
                ("nchannels", ctypes.c_int)]


def _candidates():
    env = os.environ.get("TUTTI_LIBRARY", "")
    if env:
        return [env]  # named explicitly: nothing else is tried
    found = ctypes.util.find_library("tutti")
    paths = [os.path.join(_HERE, "libtutti.so")]
    try:
        from . import _paths  # meson install only
        paths.append(os.path.normpath(os.path.join(_HERE, _paths.LIBDIR, "libtutti.so.0")))
    except ImportError:
        pass
    return paths + ([found] if found else []) + ["libtutti.so.0"]


def _load():
    errors = []
    for path in _candidates():
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            errors.append(f"{path}: {e}")
    raise ImportError("tutti: cannot load libtutti.so (set TUTTI_LIBRARY to its path): " +
                      "; ".join(errors))


lib, path = _load()

_vp, _st, _sz, _int = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t, ctypes.c_int
_ptr = ctypes.POINTER


def _decl(name, restype, *argtypes):
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


# communicators
_decl("tutti_last_error", ctypes.c_char_p, _vp)
_decl("tutti_status_string", ctypes.c_char_p, _st)
_decl("tutti_get_unique_id", _st, _ptr(UniqueIdStruct))
_decl("tutti_comm_init_rank_params", _st, _ptr(_vp), _int, _ptr(UniqueIdStruct), _int,
      _ptr(CommParams))
_decl("tutti_comm_init_env", _st, _ptr(_vp))
_decl("tutti_comm_destroy", _st, _vp)
_decl("tutti_comm_abort", _st, _vp)
_decl("tutti_comm_rank", _st, _vp, _ptr(_int))
_decl("tutti_comm_size", _st, _vp, _ptr(_int))
_decl("tutti_comm_split", _st, _vp, _int, _int, _ptr(_vp))
_decl("tutti_comm_shrink", _st, _vp, _ptr(_int), _int, _ptr(_vp))
_decl("tutti_comm_get_async_error", _st, _vp, _ptr(_st))
_decl("tutti_version", ctypes.c_int)
# collectives: blocking (stream NULL) and asynchronous (a request)
_decl("tutti_allreduce", _st, _vp, _vp, _sz, _int, _int, _vp, _vp)
_decl("tutti_broadcast", _st, _vp, _vp, _sz, _int, _int, _vp, _vp)
_decl("tutti_reduce", _st, _vp, _vp, _sz, _int, _int, _int, _vp, _vp)
_decl("tutti_reduce_scatter", _st, _vp, _vp, _sz, _int, _int, _vp, _vp)
_decl("tutti_allgather", _st, _vp, _vp, _sz, _int, _vp, _vp)
_decl("tutti_alltoall", _st, _vp, _vp, _sz, _int, _vp, _vp)
_decl("tutti_send", _st, _vp, _sz, _int, _int, _vp, _vp)
_decl("tutti_recv", _st, _vp, _sz, _int, _int, _vp, _vp)
_decl("tutti_barrier", _st, _vp, _vp)
_decl("tutti_group_start", _st)
_decl("tutti_group_end", _st)
_decl("tutti_iallreduce", _st, _vp, _vp, _sz, _int, _int, _vp, _ptr(_vp))
_decl("tutti_ibroadcast", _st, _vp, _vp, _sz, _int, _int, _vp, _ptr(_vp))
_decl("tutti_ireduce", _st, _vp, _vp, _sz, _int, _int, _int, _vp, _ptr(_vp))
_decl("tutti_ireduce_scatter", _st, _vp, _vp, _sz, _int, _int, _vp, _ptr(_vp))
_decl("tutti_iallgather", _st, _vp, _vp, _sz, _int, _vp, _ptr(_vp))
_decl("tutti_ialltoall", _st, _vp, _vp, _sz, _int, _vp, _ptr(_vp))
_decl("tutti_isend", _st, _vp, _sz, _int, _int, _vp, _ptr(_vp))
_decl("tutti_irecv", _st, _vp, _sz, _int, _int, _vp, _ptr(_vp))
_decl("tutti_ibarrier", _st, _vp, _ptr(_vp))
# gather, scatter and the variable-size collectives (count arrays: size_t[nranks])
_arr = _ptr(_sz)
_decl("tutti_alltoallv", _st, _vp, _arr, _arr, _vp, _arr, _arr, _int, _vp, _vp)
_decl("tutti_allgatherv", _st, _vp, _sz, _vp, _arr, _arr, _int, _vp, _vp)
_decl("tutti_gather", _st, _vp, _vp, _sz, _int, _int, _vp, _vp)
_decl("tutti_scatter", _st, _vp, _vp, _sz, _int, _int, _vp, _vp)
_decl("tutti_gatherv", _st, _vp, _sz, _vp, _arr, _arr, _int, _int, _vp, _vp)
_decl("tutti_scatterv", _st, _vp, _arr, _arr, _vp, _sz, _int, _int, _vp, _vp)
_decl("tutti_reduce_scatterv", _st, _vp, _vp, _arr, _int, _int, _vp, _vp)
_decl("tutti_ialltoallv", _st, _vp, _arr, _arr, _vp, _arr, _arr, _int, _vp, _ptr(_vp))
_decl("tutti_iallgatherv", _st, _vp, _sz, _vp, _arr, _arr, _int, _vp, _ptr(_vp))
_decl("tutti_igather", _st, _vp, _vp, _sz, _int, _int, _vp, _ptr(_vp))
_decl("tutti_iscatter", _st, _vp, _vp, _sz, _int, _int, _vp, _ptr(_vp))
_decl("tutti_igatherv", _st, _vp, _sz, _vp, _arr, _arr, _int, _int, _vp, _ptr(_vp))
_decl("tutti_iscatterv", _st, _vp, _arr, _arr, _vp, _sz, _int, _int, _vp, _ptr(_vp))
_decl("tutti_ireduce_scatterv", _st, _vp, _vp, _arr, _int, _int, _vp, _ptr(_vp))
# pre-multiplied sums
_decl("tutti_op_create_premul_sum", _st, _vp, _int, _int, _vp, _ptr(_int))
_decl("tutti_op_destroy", _st, _int, _vp)
_decl("tutti_test", _st, _vp, _ptr(_int))
_decl("tutti_wait", _st, _vp)
_decl("tutti_request_free", _st, _vp)
_decl("tutti_datatype_size", _sz, _int)
