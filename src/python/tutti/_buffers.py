"""_buffers.py - what a collective reads and writes: numpy arrays and torch CPU tensors, seen
without copying (their data pointer), with tutti's datatype for their element type. Clear
errors for what tutti cannot use in place: non-contiguous memory, read-only outputs, device
tensors, element types tutti has no datatype for (complex, object...)."""
import sys

# tutti/types.h numbering (part of the ABI)
INT8, UINT8, INT16, UINT16, INT32, UINT32, INT64, UINT64 = range(8)
FLOAT16, BFLOAT16, FLOAT32, FLOAT64, FP8_E4M3, FP8_E5M2, BOOL = range(8, 15)
INTEGER_TYPES = (INT8, UINT8, INT16, UINT16, INT32, UINT32, INT64, UINT64)

_NUMPY = {"int8": INT8, "uint8": UINT8, "int16": INT16, "uint16": UINT16, "int32": INT32,
          "uint32": UINT32, "int64": INT64, "uint64": UINT64, "float16": FLOAT16,
          "float32": FLOAT32, "float64": FLOAT64, "bool": BOOL}
# torch's names; the unsigned wide types and the float8 ones exist from torch 2.x only
_TORCH = {"torch.int8": INT8, "torch.uint8": UINT8, "torch.int16": INT16, "torch.int32": INT32,
          "torch.int64": INT64, "torch.float16": FLOAT16, "torch.bfloat16": BFLOAT16,
          "torch.float32": FLOAT32, "torch.float64": FLOAT64, "torch.bool": BOOL,
          "torch.uint16": UINT16, "torch.uint32": UINT32, "torch.uint64": UINT64,
          "torch.float8_e4m3fn": FP8_E4M3, "torch.float8_e5m2": FP8_E5M2}


def dtype_of(obj):
    """tutti's datatype of a numpy dtype, a torch dtype or a tutti datatype number."""
    if isinstance(obj, int):
        return obj
    name = str(obj)
    if name in _TORCH:
        return _TORCH[name]
    mod = sys.modules.get("numpy")
    if mod is not None:
        try:
            key = mod.dtype(obj).name
        except TypeError:
            key = None
        if key in _NUMPY:
            return _NUMPY[key]
    raise TypeError(f"tutti has no datatype for {obj!r}")


class Buffer:
    """One buffer as tutti sees it: address, element count, datatype; holds the object."""
    __slots__ = ("addr", "count", "dtype", "obj")

    def __init__(self, addr, count, dtype, obj):
        self.addr, self.count, self.dtype, self.obj = addr, count, dtype, obj


def _is_torch(obj):
    mod = sys.modules.get("torch")
    return mod is not None and isinstance(obj, mod.Tensor)


def _is_numpy(obj):
    mod = sys.modules.get("numpy")
    return mod is not None and isinstance(obj, mod.ndarray)


def view(obj, what, writable):
    """The Buffer of a numpy array or torch tensor; `what` names it in errors ("recvbuf")."""
    if _is_torch(obj):
        if obj.device.type != "cpu":
            raise ValueError(f"{what}: a {obj.device.type} tensor; the tutti package takes CPU "
                             "tensors (GPU tensors go through the NCCL shim with torch's nccl "
                             "backend)")
        if not obj.is_contiguous():
            raise ValueError(f"{what}: the tensor is not contiguous (call .contiguous())")
        dt = _TORCH.get(str(obj.dtype))
        if dt is None:
            raise TypeError(f"{what}: tutti has no datatype for {obj.dtype} (supported: " +
                            ", ".join(sorted(_TORCH)) + ")")
        return Buffer(obj.data_ptr() if obj.numel() > 0 else None, obj.numel(), dt, obj)
    if _is_numpy(obj):
        if not obj.flags.c_contiguous:
            raise ValueError(f"{what}: the array is not C-contiguous "
                             "(numpy.ascontiguousarray)")
        if writable and not obj.flags.writeable:
            raise ValueError(f"{what}: the array is read-only")
        dt = _NUMPY.get(obj.dtype.name)
        if dt is None:
            raise TypeError(f"{what}: tutti has no datatype for {obj.dtype} (supported: " +
                            ", ".join(sorted(_NUMPY)) + ")")
        return Buffer(obj.ctypes.data if obj.size > 0 else None, obj.size, dt, obj)
    raise TypeError(f"{what}: expected a numpy.ndarray or a torch.Tensor, got "
                    f"{type(obj).__name__}")


def same_type(a, b, what):
    """Refuse two buffers of different element types (tutti reads both with one datatype)."""
    if a.dtype != b.dtype:
        raise TypeError(f"{what}: the element types differ ({a.obj.dtype} and {b.obj.dtype})")
