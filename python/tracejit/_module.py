"""tracejit.compile(module): an nn.Module whose calls run compiled.

The wrapper is an instance of a subclass of the module's own class that
shares the original's __dict__: parameters, buffers, submodules, hooks and
the training flag are the original's (parameters(), state_dict(),
train()/eval(), attribute reads and writes all reach it), and only
__call__ differs: it calls the original through a CompiledFunction.
"""


def compile_module(module, compiled_call):
    cls = type(module)

    def __call__(self, *args, **kwargs):
        return compiled_call(*args, **kwargs)

    def __reduce_ex__(self, protocol):
        raise TypeError("a tracejit-compiled module cannot be pickled; pickle its _orig_mod")

    namespace = {
        "__call__": __call__,
        "__reduce_ex__": __reduce_ex__,
        "_orig_mod": property(lambda self: module, doc="the module this one compiles"),
        "_tracejit_compiled": compiled_call,
        "__module__": cls.__module__,
        "__qualname__": "Optimized" + cls.__qualname__,
    }
    wrapper_cls = type("Optimized" + cls.__name__, (cls,), namespace)
    wrapper = object.__new__(wrapper_cls)
    object.__setattr__(wrapper, "__dict__", module.__dict__)
    return wrapper
