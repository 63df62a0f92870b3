"""Arrays as a kernel sees them on the engine: NumPy storage with CUDA's indexing rules, and records."""

from __future__ import annotations

import numpy as np

from course.engine.messages import UserIndexError

# Arrays


_dtype_cache: dict = {}


def as_dtype(dtype):
    try:
        return _dtype_cache[dtype]
    except (KeyError, TypeError):
        pass
    try:
        result = np.dtype(dtype)
    except TypeError:  # a numba type (float32 …): numba knows its NumPy dtype
        from course.engine.simulator import numpy_dtype

        result = numpy_dtype(dtype)
    try:
        _dtype_cache[dtype] = result
    except TypeError:  # unhashable
        pass
    return result


def poison(data):
    # Uninitialised memory is not zero on a GPU; NaN / 0xA5 bytes make a read-before-write visible
    # and keep every run identical.
    if data.dtype.kind in "fc":
        data.fill(np.nan)
    else:
        data.view(np.uint8).reshape(-1).fill(0xA5)


class KernelArray:
    """An array as a kernel sees it: NumPy storage with CUDA's indexing rules (no negative wrap-around).

    An observer's ``array_class`` (:class:`course.engine.LaunchHooks`) subclasses it and wraps its public access
    methods: ``__getitem__``/``__setitem__`` (the checked load and store), :meth:`atomic` and :meth:`view_of`.
    """

    __slots__ = ("a", "space", "name", "root", "base_addr")

    # ---- checked access, used by __getitem__/__setitem__ and atomics; subclasses hook around them
    def _get(self, idx):
        c = idx.__class__
        try:
            if c is tuple:
                if len(idx) == 2:  # the common 2-D case, without a call
                    i, j = idx
                    if i < 0 or j < 0:  # TypeError for a slice: checked one by one below
                        raise IndexError
                elif min(idx) < 0:
                    raise IndexError
            elif c is int:
                if idx < 0:
                    raise IndexError
            elif idx < 0:
                raise IndexError
            v = self.a[idx]
        except TypeError:
            return self._get_slow(idx)
        except IndexError as exc:
            raise UserIndexError(self._index_message(idx, exc)) from None
        if v.__class__ is np.ndarray:
            return self.view_of(v)
        if v.__class__ is np.void:
            return Record(v)
        return v

    def _get_slow(self, idx):
        try:
            if idx.__class__ is tuple:
                for i in idx:
                    if i.__class__ is not slice and i < 0:
                        raise IndexError
            elif idx.__class__ is not slice and idx < 0:
                raise IndexError
            v = self.a[idx]
        except (IndexError, TypeError) as exc:
            raise UserIndexError(self._index_message(idx, exc)) from None
        if v.__class__ is np.ndarray:
            return self.view_of(v)
        if v.__class__ is np.void:
            return Record(v)
        return v

    def _set(self, idx, value):
        c = idx.__class__
        try:
            if c is int:
                if idx < 0:
                    raise IndexError
            elif c is tuple:
                try:
                    if min(idx) < 0:
                        raise IndexError
                except TypeError:  # a slice in the tuple
                    for i in idx:
                        if i.__class__ is not slice and i < 0:
                            raise IndexError from None
            elif c is not slice and idx < 0:
                raise IndexError
            vc = value.__class__
            if vc is float or vc is int or vc in NUMBER_TYPES:
                pass  # the commonest value: a number
            elif vc is self.__class__ or isinstance(value, KernelArray):
                value = value.a
            elif isinstance(value, Record):  # the tracer's records are a subclass
                value = value._v
            self.a[idx] = value
        except (IndexError, TypeError) as exc:
            raise UserIndexError(self._index_message(idx, exc)) from None

    __getitem__ = _get
    __setitem__ = _set

    def atomic(self, idx, fn):
        """One indivisible read-modify-write of element ``idx`` (``cuda.atomic.*``): stores ``fn(old)``, returns old."""
        old = self._get(idx)
        self._set(idx, fn(old))
        return old

    def view_of(self, sub):
        """A kernel array over ``sub`` (a NumPy view of this array's storage), with this array's identity."""
        arr = self.__class__.__new__(self.__class__)
        arr.a = sub
        arr.space = self.space
        arr.name = self.name
        arr.root = self.root
        arr.base_addr = self.base_addr
        return arr


    def _index_message(self, idx, exc):
        shown = idx if isinstance(idx, tuple) else (idx,)
        for i in shown:
            if isinstance(i, (float, np.floating)):
                return (
                    f"index {idx!r} into `{self.name}` is a float; array indices must be integers "
                    "(use // for integer division, or int(...))"
                )
        if any(not isinstance(i, slice) and _is_int(i) and i < 0 for i in shown):
            return (
                f"index {_fmt_idx(idx)} into `{self.name}` (shape {self.a.shape}) is negative; CUDA has no "
                "wrap-around like Python: a negative index reads or writes outside the array"
            )
        if isinstance(exc, IndexError):
            return (
                f"index {_fmt_idx(idx)} is out of bounds for `{self.name}` with shape {self.a.shape}; on a GPU "
                "this reads or writes memory that is not yours. Guard the access (e.g. `if i < n:`) or "
                "launch no more threads than there are elements"
            )
        return f"cannot index `{self.name}` (shape {self.a.shape}) with {idx!r}: {exc}"

    # ---- what kernels use besides indexing
    @property
    def shape(self):
        return self.a.shape

    @property
    def size(self):
        return self.a.size

    @property
    def ndim(self):
        return self.a.ndim

    @property
    def dtype(self):
        return self.a.dtype

    @property
    def strides(self):
        return self.a.strides

    @property
    def T(self):
        return self.view_of(self.a.T)

    def __len__(self):
        return len(self.a)

    def __iter__(self):
        for i in range(len(self.a)):
            yield self[i]

    def __array__(self, dtype=None, copy=None):
        return self.a if dtype is None else self.a.astype(dtype)

    def __getattr__(self, name):
        if name in ("a", "space", "name", "root", "base_addr"):
            raise AttributeError(name)
        attr = getattr(self.a, name)
        if attr.__class__ is np.ndarray:  # .real, .imag …: views of the same memory stay checked and traced
            return self.view_of(attr)
        if name in _VIEW_METHODS:
            def view_method(*args, **kwargs):
                res = attr(*args, **kwargs)
                return self.view_of(res) if isinstance(res, np.ndarray) and res.base is not None else res
            return view_method
        return attr

    def __array_ufunc__(self, ufunc, method, *args, **kwargs):
        args = tuple(x.a if isinstance(x, KernelArray) else x for x in args)
        out = kwargs.get("out")
        if out:
            kwargs["out"] = tuple(x.a if isinstance(x, KernelArray) else x for x in out)
        return getattr(ufunc, method)(*args, **kwargs)

    def __repr__(self):
        return f"<{self.space} array {self.name} shape={self.a.shape} dtype={self.a.dtype}>"


NUMBER_TYPES = frozenset(t for t in np.sctypeDict.values() if issubclass(t, np.number) or t is np.bool_)


class Record:
    """One element of a structured array: fields by attribute (``p.x``) or by key (``p['x']``), written through."""

    __slots__ = ("_v",)

    def __init__(self, v):
        object.__setattr__(self, "_v", v)

    def __getattr__(self, name):
        try:
            return self._v[name]
        except (KeyError, ValueError, IndexError):
            raise AttributeError(f"record has no field {name!r} (fields: {self._v.dtype.names})") from None

    def __setattr__(self, name, value):
        self._v[name] = value

    def __getitem__(self, key):
        return self._v[key]

    def __setitem__(self, key, value):
        self._v[key] = value


_VIEW_METHODS = frozenset({"reshape", "view", "ravel", "squeeze", "transpose", "swapaxes"})


def _is_int(i):
    return isinstance(i, (int, np.integer))


def _fmt_idx(idx):
    if isinstance(idx, tuple):
        return "[" + ", ".join(str(int(i)) if _is_int(i) else repr(i) for i in idx) + "]"
    return f"[{int(idx)}]" if _is_int(idx) else repr(idx)
