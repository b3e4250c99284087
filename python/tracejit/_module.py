"""tracejit.compile(module): an nn.Module whose calls run compiled.

The wrapper is an instance of a subclass of the module's own class that
shares the original's __dict__: parameters, buffers, submodules, hooks and
the training flag are the original's (parameters(), state_dict(),
train()/eval(), attribute reads and writes all reach it), and only
__call__ differs: it calls the original through a CompiledFunction.
"""
import copy


def compile_module(module, compiled_call, recompile):
    """`recompile(m)` compiles another module with the same options: a copy
    (copy.copy / copy.deepcopy) of a compiled module is the copy of its
    original, compiled anew, as with torch.compile."""
    cls = type(module)

    def __call__(self, *args, **kwargs):
        return compiled_call(*args, **kwargs)

    def __copy__(self):
        return recompile(copy.copy(module))

    def __deepcopy__(self, memo):
        copied = recompile(copy.deepcopy(module, memo))
        memo[id(self)] = copied
        return copied

    def __reduce_ex__(self, protocol):
        raise TypeError("a tracejit-compiled module cannot be pickled; pickle its _orig_mod")

    namespace = {
        "__call__": __call__,
        "__reduce_ex__": __reduce_ex__,
        "__copy__": __copy__,
        "__deepcopy__": __deepcopy__,
        "_orig_mod": property(lambda self: module, doc="the module this one compiles"),
        "_tracejit_compiled": compiled_call,
        "__module__": cls.__module__,
        "__qualname__": "Optimized" + cls.__qualname__,
    }
    wrapper_cls = type("Optimized" + cls.__name__, (cls,), namespace)
    wrapper = object.__new__(wrapper_cls)
    object.__setattr__(wrapper, "__dict__", module.__dict__)
    return wrapper
