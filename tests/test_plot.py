"""The --plot timeline (issue 30 item 19): a picture wide enough to read, whose bars name their
instruction and source line where the text fits inside the bar."""

from __future__ import annotations

import pytest

import neuronemu

pytest.importorskip("matplotlib", reason="--plot needs the [plot] extra (matplotlib)")

from neuronemu.plot import draw_timeline, plot_timeline

KERNEL = """
.hbm a float32[128, 2048] input
.hbm c float32[128, 2048] output
.sbuf t float32[128, 2048]
.sbuf u float32[128, 16]
    dma.copy t, a, queue=0
    vector.tensor_scalar t, t, op0=multiply, operand0=2.0
    vector.tensor_scalar u, u, op0=add, operand0=1.0
    dma.copy c, t, queue=1
"""


@pytest.fixture(scope="module")
def result():
    return neuronemu.run(neuronemu.assemble(KERNEL, filename="k.s"))


def test_the_picture_is_large(result, tmp_path):
    fig = draw_timeline(result.program, result.timing)
    width, height = fig.get_size_inches() * fig.dpi
    assert width >= 1400 and height >= 300
    import matplotlib.pyplot as plt

    plt.close(fig)
    path = plot_timeline(result.program, result.timing, tmp_path / "t.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_wide_bars_are_labelled_and_labels_fit_their_bars(result):
    import matplotlib.pyplot as plt

    fig = draw_timeline(result.program, result.timing)
    ax = fig.axes[0]
    fig.canvas.draw()
    texts = {t.get_text(): t for t in ax.texts}
    # the long copies and the 2048-wide multiply are labelled with mnemonic and line
    assert "copy :6" in texts and "copy :9" in texts and "tensor_scalar :7" in texts
    assert "tensor_scalar :8" not in texts          # a 16-wide op: its bar is too narrow
    bars = {}
    for collection in ax.collections:
        for path in collection.get_paths():
            box = path.get_extents(collection.get_transform())
            bars.setdefault(round(box.y0), []).append(box)
    for text in texts.values():
        extent = text.get_window_extent()
        holders = [b for row in bars.values() for b in row
                   if b.x0 <= extent.x0 and extent.x1 <= b.x1 and b.y0 <= extent.y0]
        assert holders, f"label {text.get_text()!r} does not fit inside a bar"
    plt.close(fig)
