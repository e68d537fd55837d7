"""Run-time control flow and registers of NKI 0.6, lowered onto neuronemu's ``ctrl.*``
instructions (docs/language.md, "Registers and control flow") instead of being unrolled.

``nisa.register_alloc/move/load/store`` are ``ctrl.mov`` / ``ctrl.load`` / ``ctrl.store``.
``nl.fori_loop(lower, upper, body)``, ``nl.dynamic_range(...)`` and ``nl.while_loop(init,
body)`` trace their body **once** between a label and a backward branch; the induction
variable is a register, so the body addresses tiles with it (slices, ``nl.ds``,
``.ap(scalar_offset=...)``). Tiles allocated in the body get one slot, reused by every
iteration (neuronemu orders the reuse by its memory dependencies).
"""

from __future__ import annotations

from neuronemu.nki._dynamic import RegExpr, VirtualRegister
from neuronemu.nki._trace import NkiTensor, NkiUnsupported, fail, tracer, user_site

__all__ = [
    "VirtualRegister",
    "dynamic_range",
    "fori_loop",
    "register_alloc",
    "register_load",
    "register_move",
    "register_store",
    "while_loop",
]


def _int_or_register(value, what: str) -> str:
    if isinstance(value, VirtualRegister):
        return value.register_text()
    if isinstance(value, RegExpr):
        fail(f"{what}: an expression of registers must be computed into a register first "
             f"(nisa.register_move takes a register or an int)", unsupported=True)
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        fail(f"{what} must be a Python int or a register, got {type(value).__name__}")
    return str(int(value))


def register_alloc(x=None) -> VirtualRegister:
    """A new register, set to ``x`` (an int or a [1, 1] integer tile) when given."""
    tr = tracer()
    reg = tr.register()
    if isinstance(x, NkiTensor):
        register_load(reg, x)
    elif x is not None:
        tr.emit("ctrl.mov", reg.register_text(), _int_or_register(x, "x"))
    return reg


def _register(value, what: str) -> VirtualRegister:
    if not isinstance(value, VirtualRegister):
        fail(f"{what} must be a register from nisa.register_alloc(), got "
             f"{type(value).__name__}")
    return value


def register_move(dst, src) -> None:
    """dst = src (a register or an int), at run time (``ctrl.mov``)."""
    tracer().emit("ctrl.mov", _register(dst, "dst").register_text(),
                  _int_or_register(src, "src"))


def register_load(dst, src) -> None:
    """dst = the integer in the [1, 1] tile src, at run time (``ctrl.load``)."""
    tr = tracer()
    if not isinstance(src, NkiTensor):
        fail(f"src must be a [1, 1] integer tensor, got {type(src).__name__}")
    tr.emit("ctrl.load", _register(dst, "dst").register_text(), src.operand(tr))


def register_store(dst, src) -> None:
    """The [1, 1] integer tile dst = register src, at run time (``ctrl.store``)."""
    tr = tracer()
    if not isinstance(dst, NkiTensor):
        fail(f"dst must be a [1, 1] integer tensor, got {type(dst).__name__}")
    tr.emit("ctrl.store", dst.operand(tr), _register(src, "src").register_text())


def _step(step) -> int:
    if isinstance(step, (RegExpr, bool)) or not hasattr(step, "__index__"):
        fail(f"step must be a compile-time positive int, got {step!r}")
    if int(step) <= 0:
        fail(f"step must be positive, got {int(step)}")
    return int(step)


def _loop_head(lower, upper, step: int):
    """Emit the loop entry; returns (counter register, upper text, body label, end label)."""
    tr = tracer()
    counter = tr.register()
    lo = _int_or_register(lower, "lower")
    hi = _int_or_register(upper, "upper")
    body, end = tr.new_label("loop"), tr.new_label("loop_end")
    tr.emit("ctrl.mov", counter.register_text(), lo)
    tr.emit("ctrl.bge", counter.register_text(), hi, end)
    tr.label(body)
    tr.loops.append(len(tr.instructions))
    return counter, hi, body, end


def _keep_live_through_loop(tr, loop_start: int) -> None:
    """A tile from before a device loop that the body uses is used again by the next
    iteration: with live-range allocation (a tile's ``slot.live``) it stays live to the
    loop's backward branch, so no tile of the body gets its bytes."""
    last = len(tr.instructions) - 1
    for slot in tr.slots:
        live = getattr(slot, "live", None)
        if live is not None and live.start < loop_start <= live.end:
            live.end = max(live.end, last)


def _loop_tail(counter: VirtualRegister, hi: str, step: int, body: str, end: str) -> None:
    tr = tracer()
    tr.emit("ctrl.add", counter.register_text(), counter.register_text(), str(step))
    tr.emit("ctrl.blt", counter.register_text(), hi, body)
    _keep_live_through_loop(tr, tr.loops.pop())
    tr.label(end)


def fori_loop(lower, upper, body_fun, step=1) -> None:
    """``for i in range(lower, upper, step): body_fun(i)`` on device: ``lower`` and ``upper``
    are ints or registers, ``i`` a register holding the iteration value (a copy: writing it
    does not change the loop). The body is traced once."""
    if not callable(body_fun):
        fail(f"body_fun must be a function of the iteration register, got "
             f"{type(body_fun).__name__}")
    step = _step(step)
    counter, hi, body, end = _loop_head(lower, upper, step)
    i = tracer().register()
    tracer().emit("ctrl.mov", i.register_text(), counter.register_text())
    body_fun(i)
    _loop_tail(counter, hi, step, body, end)


def dynamic_range(start, stop=None, step=1):
    """``for i in nl.dynamic_range(...)``: a loop on device (the body is traced once; ``i`` is
    the counter register). ``break`` / ``continue`` have no device form and are not allowed."""
    if stop is None:
        start, stop = 0, start
    step = _step(step)
    tr = tracer()
    site = user_site()
    counter, hi, body, end = _loop_head(start, stop, step)
    try:
        yield counter
    except GeneratorExit:   # the for body left by break (or by an error, reported already)
        tr.deferred_errors.append(NkiUnsupported(
            "break out of an nl.dynamic_range loop has no device form", site.location(),
            ("loop on device with a register condition: nl.while_loop",)))
        raise
    _loop_tail(counter, hi, step, body, end)


def while_loop(init, body_fun) -> None:
    """``r = init; while r != 0: r = body_fun(r)`` on device: the condition is tested before
    each iteration; the body returns the next condition register. Traced once."""
    tr = tracer()
    cond = _register(init, "init")
    top, end = tr.new_label("while"), tr.new_label("while_end")
    tr.label(top)
    tr.emit("ctrl.beq", cond.register_text(), "0", end)
    tr.loops.append(len(tr.instructions))
    nxt = body_fun(cond)
    if nxt is None:
        fail("the while_loop body must return the next condition register (return r)")
    if nxt is not cond:
        tr.emit("ctrl.mov", cond.register_text(), _int_or_register(nxt, "the body's result"))
    tr.emit("ctrl.jmp", top)
    _keep_live_through_loop(tr, tr.loops.pop())
    tr.label(end)
