"""Wide accesses for numba kernels: the one set of 16-byte (and 8-byte) load/store intrinsics of the course.

numba has no ``float4`` array type, and a 16-byte scalar (``complex128``) is loaded as two 8-byte halves.
These functions give a kernel one wide access per call.  Each is a plain Python function that the CPU
engine and the tracer run as written; on the GPU its typing and lowering are registered with numba
(:func:`_register_gpu`), so the compiler emits one vector instruction (``LDG.E.128``/``STG.E.128`` for
global memory, ``LDS.128``/``STS.128`` for shared memory).  A kernel calls the same names on every backend.

Three call shapes, one per chapter that needs them:

- ``load4(arr, row, col)`` / ``store4(arr, row, col, x0, x1, x2, x3)``: 4 neighbouring elements of a row
  of a global 2-D array (chapter 05's ``vec4`` transpose and 16-byte copy), with ``uint32`` (a cast to
  unsigned 32-bit) for its index arithmetic;
- ``gload4``/``sload4``/``gstore4``/``sstore4(arr, idx, ...)``: 4 floats at an index tuple of a global or
  shared array of any rank (chapter 09's vectorised matmul);
- ``vector_load(width)(a, i)``: ``a[width*i : width*i+width]`` of a 1-D float32 array, width 1, 2 or 4
  (chapter 07's reductions).

The host checks sizes and 16-byte alignment before choosing a 16-byte path: the intrinsics assume it.
"""

from __future__ import annotations

import course  # (chooses the backend before numba is imported)
from course.trace.analysis import vector_dtype


def uint32(x):
    """``x`` as an unsigned 32-bit integer.

    In a kernel compiled for the GPU this is numba's ``uint32`` cast (registered below), so the
    arithmetic stays 32-bit and unsigned; run as Python (the CPU engine, the tracer) it gives the
    same value as a plain int.
    """
    return int(x) & 0xFFFFFFFF


# --- a row of a global matrix: load4 / store4 -------------------------------------------------------------


def load4(arr, row, col):
    """``arr[row, col:col+4]`` as a 4-tuple: one 16-byte load on the GPU, 4 element loads in Python."""
    return arr[row, col], arr[row, col + 1], arr[row, col + 2], arr[row, col + 3]


def store4(arr, row, col, x0, x1, x2, x3):
    """``arr[row, col:col+4] = (x0, x1, x2, x3)``: one 16-byte store on the GPU, 4 element stores in Python."""
    arr[row, col] = x0
    arr[row, col + 1] = x1
    arr[row, col + 2] = x2
    arr[row, col + 3] = x3


# --- 4 floats at an index tuple, global or shared: gload4 / sload4 / gstore4 / sstore4 ----------------------


# four floats as one element: one 16-byte access for the tracer, not a record read field by field
_VEC4 = vector_dtype(4)


def _vec_view(arr, idx):
    """``arr`` seen as 16-byte elements and the index of the element holding ``arr[idx]`` (CPU engine)."""
    make_view = getattr(arr, "view_of", None)  # the engine's KernelArray.view_of
    if make_view is None:  # numba's stock simulator: no byte-level view
        return None, None
    return make_view(arr.a.view(_VEC4)), tuple(idx[:-1]) + (idx[-1] // 4,)


def _load4(arr, idx):
    view, j = _vec_view(arr, idx)
    if view is None:
        head = tuple(idx[:-1])
        return tuple(arr[head + (idx[-1] + q,)] for q in range(4))
    rec = view[j]  # one 16-byte element: the tracer records one 16-byte access, as the GPU makes
    return rec[0], rec[1], rec[2], rec[3]


def _store4(arr, idx, x0, x1, x2, x3):
    view, j = _vec_view(arr, idx)
    if view is None:
        head = tuple(idx[:-1])
        for q, x in enumerate((x0, x1, x2, x3)):
            arr[head + (idx[-1] + q,)] = x
        return
    view[j] = (x0, x1, x2, x3)


def gload4(arr, idx):
    """``arr[idx[:-1]][idx[-1]:idx[-1]+4]`` of a global array as 4 floats: one 16-byte load (``LDG.E.128``)."""
    return _load4(arr, idx)


def sload4(arr, idx):
    """The same from a shared array: one 16-byte shared load (``LDS.128``)."""
    return _load4(arr, idx)


def gstore4(arr, idx, x0, x1, x2, x3):
    """Store 4 floats at ``arr[idx[:-1]][idx[-1]:idx[-1]+4]`` of a global array: one 16-byte store."""
    _store4(arr, idx, x0, x1, x2, x3)


def sstore4(arr, idx, x0, x1, x2, x3):
    """The same into a shared array: one 16-byte shared store."""
    _store4(arr, idx, x0, x1, x2, x3)


# --- 1, 2 or 4 floats of a 1-D array: vector_load(width) ----------------------------------------------------


def gpu_vector_load(width):
    """A numba intrinsic: ``vector_load(width)(a, i)`` reads a[width*i : width*i+width] in one instruction."""
    from llvmlite import ir
    from numba import types
    from numba.cuda.extending import intrinsic

    @intrinsic
    def load(typingctx, arr, idx):
        if not (isinstance(arr, types.Array) and arr.ndim == 1 and arr.dtype == types.float32
                and arr.layout == "C" and isinstance(idx, types.Integer)):
            return None
        ret = arr.dtype if width == 1 else types.UniTuple(arr.dtype, width)

        def codegen(context, builder, sig, args):
            aty, ity = sig.args
            a, i = args
            data = context.make_array(aty)(context, builder, value=a).data
            i64 = context.cast(builder, i, ity, types.int64)
            ptr = builder.gep(data, [builder.mul(i64, ir.Constant(ir.IntType(64), width))])
            if width == 1:
                return builder.load(ptr, align=4)
            vec = ir.VectorType(ir.FloatType(), width)
            # align = 4*width tells the compiler the address is a multiple of the vector size: one
            # wide load instead of `width` narrow ones (the host checks the array's alignment)
            v = builder.load(builder.bitcast(ptr, vec.as_pointer()), align=4 * width)
            parts = [builder.extract_element(v, ir.Constant(ir.IntType(32), k)) for k in range(width)]
            return context.make_tuple(builder, ret, parts)

        return ret(arr, idx), codegen

    cpu = cpu_vector_load(width)

    class DualLoad(type(load)):
        """The intrinsic for numba, the CPU twin when Python calls it (the engine or tracer running a GPU kernel)."""

        def __call__(self, *args, **kwargs):
            return cpu(*args, **kwargs)

    load.__class__ = DualLoad  # numba registered this very object as a global: its typing is unchanged
    return load


_VIEWS: dict = {}


def cpu_vector_load(width):
    """The CPU engine's twin of the intrinsic: the same bytes read as one ``4*width``-byte element."""
    vec = vector_dtype(width)  # one wide access for the tracer (course.trace.analysis.VECTOR_DTYPE_KEY)

    def load(a, i):
        if width == 1:
            return a[i]
        make_view = getattr(a, "view_of", None)
        if make_view is None:  # numba's stock simulator: no byte-level view, read element by element
            return tuple(a[width * i + k] for k in range(width))
        key = id(a)
        hit = _VIEWS.get(key)
        if hit is None or hit[0] is not a:
            if len(_VIEWS) > 8:  # a few arrays per launch; do not keep old launches alive
                _VIEWS.clear()
            m = a.a.shape[0] // width
            hit = _VIEWS[key] = (a, make_view(a.a[: m * width].view(vec)))
        rec = hit[1][i]
        return tuple(rec[k] for k in range(width))

    return load


_LOADS: dict = {}


def vector_load(width: int):
    """``load(a, i)`` → a[width*i], …, a[width*i + width-1] as one load (width 1, 2 or 4; float32, contiguous)."""
    if width not in (1, 2, 4):
        raise ValueError(f"vector_load: width {width} is not 1, 2 or 4 (4 floats = 16 bytes, the widest load).")
    cache = _LOADS.setdefault(course.on_gpu(), {})
    if width not in cache:
        cache[width] = gpu_vector_load(width) if course.on_gpu() else cpu_vector_load(width)
    return cache[width]


# --- the GPU side: typing and lowering of the Python functions above ----------------------------------------


def _register_gpu():
    """Teach numba's CUDA target ``uint32`` (a cast) and the 16-byte accesses above: one instruction each.

    Typing and lowering are registered for the Python functions themselves, so a kernel calls the same
    names on every backend: Python (the CPU engine, the tracer) runs them as written, the GPU compiler
    emits one vector instruction.  The last index must be a multiple of 4 and the address 16-byte
    aligned.  Global arrays use address space 1, shared ones 3: what lets the compiler emit
    ``LDG.E.128``/``LDS.128``.
    """
    from llvmlite import ir
    from numba import types
    from numba.cuda import cgutils
    from numba.cuda.extending import lower_builtin, type_callable

    @type_callable(uint32)
    def _type_uint32(context):
        def typer(x):
            if isinstance(x, types.Integer):
                return types.uint32

        return typer

    @lower_builtin(uint32, types.Integer)
    def _lower_uint32(context, builder, sig, args):
        return context.cast(builder, args[0], sig.args[0], types.uint32)

    def vector_pointer(context, builder, arrty, array, indices, space):
        """A pointer to 4 elements of ``arrty`` at ``indices`` ((value, type) pairs) in address ``space``."""
        ary = context.make_array(arrty)(context, builder, value=array)
        inds = [context.cast(builder, v, t, types.intp) for v, t in indices]
        ptr = cgutils.get_item_pointer(context, builder, arrty, ary, inds, wraparound=False)
        elty = context.get_value_type(arrty.dtype)
        sptr = builder.addrspacecast(ptr, ir.PointerType(elty, space))
        return builder.bitcast(sptr, ir.PointerType(ir.VectorType(elty, 4), space)), elty

    def load_vector(context, builder, sig, vptr):
        v = builder.load(vptr, align=16)
        vals = [builder.extract_element(v, ir.Constant(ir.IntType(32), k)) for k in range(4)]
        return context.make_tuple(builder, sig.return_type, vals)

    def store_vector(context, builder, sig, args, first, vptr, elty):
        v = ir.Constant(ir.VectorType(elty, 4), ir.Undefined)
        for k in range(4):
            x = context.cast(builder, args[first + k], sig.args[first + k], sig.args[0].dtype)
            v = builder.insert_element(v, x, ir.Constant(ir.IntType(32), k))
        builder.store(v, vptr, align=16)
        return context.get_dummy_value()

    # load4 / store4: a 2-D global array, row and column
    def is_matrix(arr, row, col):
        return (isinstance(arr, types.Array) and arr.ndim == 2 and isinstance(row, types.Integer)
                and isinstance(col, types.Integer))

    @type_callable(load4)
    def _type_load4(context):
        def typer(arr, row, col):
            if is_matrix(arr, row, col):
                return types.UniTuple(arr.dtype, 4)

        return typer

    @lower_builtin(load4, types.Array, types.Integer, types.Integer)
    def _lower_load4(context, builder, sig, args):
        vptr, _ = vector_pointer(context, builder, sig.args[0], args[0], zip(args[1:3], sig.args[1:3]), 1)
        return load_vector(context, builder, sig, vptr)

    @type_callable(store4)
    def _type_store4(context):
        def typer(arr, row, col, x0, x1, x2, x3):
            if is_matrix(arr, row, col):
                return types.none

        return typer

    @lower_builtin(store4, types.Array, types.Integer, types.Integer, types.Any, types.Any, types.Any, types.Any)
    def _lower_store4(context, builder, sig, args):
        vptr, elty = vector_pointer(context, builder, sig.args[0], args[0], zip(args[1:3], sig.args[1:3]), 1)
        return store_vector(context, builder, sig, args, 3, vptr, elty)

    # gload4 / sload4 / gstore4 / sstore4: an index tuple, global (space 1) or shared (space 3)
    def fits(arr, idx):
        return (isinstance(arr, types.Array) and isinstance(idx, types.BaseTuple) and len(idx) == arr.ndim
                and all(isinstance(t, types.Integer) for t in idx))

    def tuple_indices(builder, idxty, idx):
        # a generator: the tuple is unpacked inside vector_pointer, after the array (the original order)
        yield from zip(cgutils.unpack_tuple(builder, idx, len(idxty)), idxty)

    for load, store, space in ((gload4, gstore4, 1), (sload4, sstore4, 3)):

        @type_callable(load)
        def _type_load(context):
            def typer(arr, idx):
                if fits(arr, idx):
                    return types.UniTuple(arr.dtype, 4)

            return typer

        @lower_builtin(load, types.Array, types.BaseTuple)
        def _lower_load(context, builder, sig, args, space=space):
            arrty, idxty = sig.args[0], sig.args[1]
            vptr, _ = vector_pointer(context, builder, arrty, args[0], tuple_indices(builder, idxty, args[1]), space)
            return load_vector(context, builder, sig, vptr)

        @type_callable(store)
        def _type_store(context):
            def typer(arr, idx, x0, x1, x2, x3):
                if fits(arr, idx):
                    return types.none

            return typer

        @lower_builtin(store, types.Array, types.BaseTuple, types.Any, types.Any, types.Any, types.Any)
        def _lower_store(context, builder, sig, args, space=space):
            arrty, idxty = sig.args[0], sig.args[1]
            vptr, elty = vector_pointer(context, builder, arrty, args[0], tuple_indices(builder, idxty, args[1]),
                                        space)
            return store_vector(context, builder, sig, args, 2, vptr, elty)


if course.on_gpu():
    _register_gpu()
