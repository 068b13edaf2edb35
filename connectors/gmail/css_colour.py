"""CSS colours as sRGB: tinycss2 reads every colour syntax (CSS Color 4: all named colours,
``#rgba``, ``rgb(0 0 0 / 0%)``, ``hsl``, ``hwb``, ``lab``, ``lch``, ``oklab``, ``oklch``,
``color()``); this module brings the ones tinycss2 does not convert into sRGB, so that text
coloured like its background is caught whatever syntax names the colour."""

from __future__ import annotations

import tinycss2
from tinycss2.ast import Node
from tinycss2.color4 import Color, parse_color

Colour = tuple[float, float, float, float]  # r, g, b in 0-255, alpha in 0-1
Matrix = tuple[tuple[float, float, float], ...]

# From the CSS Color 4 specification's sample code: Bradford D50 to D65, XYZ to linear sRGB.
_D50_TO_D65: Matrix = (
    (0.955473421488075, -0.02309845494876471, 0.06325924320057072),
    (-0.0283697093338637, 1.0099953980813041, 0.021041441191917323),
    (0.012314014864481998, -0.020507649298898964, 1.330365926242124),
)
_XYZ_TO_LINEAR_SRGB: Matrix = (
    (3.2409699419045226, -1.537383177570094, -0.4986107602930034),
    (-0.9692436362808796, 1.8759675015077202, 0.04155505740717559),
    (0.05563007969699366, -0.20397695888897652, 1.0569715142428786),
)
# Wide-gamut RGB spaces share sRGB's white and black: near white stays near white, which is
# all the judgement needs, so their channels are read as sRGB's.
_RGB_LIKE = frozenset({"srgb", "display-p3", "a98-rgb", "prophoto-rgb", "rec2020"})


def parse_colour(value: str | Node) -> Colour | None:
    """A CSS colour as ``(r, g, b, alpha)``; None when it is not one (or ``currentcolor``)."""
    text = value if isinstance(value, str) else tinycss2.serialize([value])
    colour = parse_color(text.strip())
    if not isinstance(colour, Color):
        return None
    red, green, blue = _srgb(colour)
    return (_byte(red), _byte(green), _byte(blue), colour[-1])


def _srgb(colour: Color) -> tuple[float, float, float]:
    space: str = colour.space  # type: ignore[attr-defined]  # not in types-tinycss2
    if space in ("hsl", "hwb"):
        colour, space = colour.to("srgb"), "srgb"
    elif space in ("lab", "lch"):
        colour, space = colour.to("xyz-d50"), "xyz-d50"
    elif space in ("oklab", "oklch"):
        colour, space = colour.to("xyz-d65"), "xyz-d65"
    channels = tuple(channel or 0.0 for channel in list(colour)[:3])  # "none" is 0
    if space in _RGB_LIKE:
        return channels[0], channels[1], channels[2]
    if space == "xyz-d50":
        channels = _times(_D50_TO_D65, channels)
        space = "xyz-d65"
    if space in ("xyz-d65", "xyz"):
        channels = _times(_XYZ_TO_LINEAR_SRGB, channels)
    red, green, blue = (_gamma(channel) for channel in channels)
    return red, green, blue


def _times(matrix: Matrix, vector: tuple[float, ...]) -> tuple[float, float, float]:
    x, y, z = (sum(m * v for m, v in zip(row, vector, strict=True)) for row in matrix)
    return x, y, z


def _gamma(linear: float) -> float:
    """sRGB's transfer function, from linear light (``srgb-linear``, XYZ) to the channel."""
    size = abs(linear)
    encoded = 12.92 * size if size <= 0.0031308 else 1.055 * size ** (1 / 2.4) - 0.055
    return encoded if linear >= 0 else -encoded


def _byte(channel: float) -> float:
    return min(max(channel * 255, 0.0), 255.0)
