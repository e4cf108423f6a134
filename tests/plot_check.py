#!/usr/bin/env python3
# plot_check.py: checks a picture plot() wrote, with the standard library only
# (zlib decodes the PNG, xml.etree parses the SVG), so tests need no numpy or PIL.
#
#   plot_check.py png FILE WIDTH HEIGHT [--box X0 Y0 X1 Y1] [--colors N] [--min PIXELS]
#       FILE is a PNG of WIDTH x HEIGHT; inside the box (default: the whole
#       picture) at least PIXELS (default 200) pixels are not white, and each of
#       the first N colours of the palette (matplotlib's tab10, the order of the
#       series), alone or blended with white, covers at least 20 pixels of it.
#   plot_check.py svg FILE [--min-paths N]
#       FILE is well-formed XML whose root is an <svg> element with a width,
#       a height and at least N (default 1) <path> elements.
# Exit 0 when every check holds; otherwise each failed check is printed and the exit is 1.
import struct
import sys
import xml.etree.ElementTree as ET
import zlib

TAB10 = [(31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40), (148, 103, 189),
         (140, 86, 75), (227, 119, 194), (127, 127, 127), (188, 189, 34), (23, 190, 207)]


def read_png(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG (bad signature)")
    pos, idat, ihdr = 8, [], None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        if zlib.crc32(kind + body) & 0xffffffff != crc:
            raise ValueError("bad CRC in chunk %r" % kind)
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
        pos += 12 + length
    if ihdr is None:
        raise ValueError("no IHDR chunk")
    width, height, depth, ctype, _, _, interlace = ihdr
    if depth != 8 or ctype not in (2, 6) or interlace:
        raise ValueError("unexpected PNG format: depth %d, colour type %d, interlace %d" % (depth, ctype, interlace))
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        ftype, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if ftype == 1:
                line[i] = (line[i] + a) & 255
            elif ftype == 2:
                line[i] = (line[i] + b) & 255
            elif ftype == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 255
            elif ftype != 0:
                raise ValueError("bad filter type %d on row %d" % (ftype, y))
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(width)])
        prev = line
    return width, height, rows


def near(p, q):
    """p is colour q drawn over white with at least 40% coverage (antialiased
    edges of a line that falls between pixel rows are such blends)."""
    alphas = []
    for a, b in zip(p, q):
        if b > 230:
            if a < b - 40:
                return False
            continue
        alphas.append((255 - a) / (255 - b))
    return bool(alphas) and min(alphas) >= 0.4 and max(alphas) - min(alphas) <= 0.2


def check_png(args):
    path, want_w, want_h = args[0], int(args[1]), int(args[2])
    opts = args[3:]
    box, ncolors, min_ink = None, 0, 200
    i = 0
    while i < len(opts):
        if opts[i] == "--box":
            box = tuple(int(v) for v in opts[i + 1:i + 5]); i += 5
        elif opts[i] == "--colors":
            ncolors = int(opts[i + 1]); i += 2
        elif opts[i] == "--min":
            min_ink = int(opts[i + 1]); i += 2
        else:
            raise SystemExit("unknown option " + opts[i])
    errors = []
    w, h, rows = read_png(path)
    if (w, h) != (want_w, want_h):
        errors.append("size %dx%d, expected %dx%d" % (w, h, want_w, want_h))
        return errors
    x0, y0, x1, y1 = box if box else (0, 0, w, h)
    ink, counts = 0, [0] * ncolors
    for y in range(y0, y1):
        for x in range(x0, x1):
            p = rows[y][x]
            if p != (255, 255, 255):
                ink += 1
            for k in range(ncolors):
                if near(p, TAB10[k]):
                    counts[k] += 1
    if ink < min_ink:
        errors.append("only %d non-white pixels in box %s (expected at least %d)" % (ink, (x0, y0, x1, y1), min_ink))
    for k, n in enumerate(counts):
        if n < 20:
            errors.append("series %d's colour %s covers %d pixels in the box (expected at least 20)" % (k + 1, TAB10[k], n))
    return errors


def check_svg(args):
    path, opts = args[0], args[1:]
    min_paths = int(opts[opts.index("--min-paths") + 1]) if "--min-paths" in opts else 1
    errors = []
    root = ET.parse(path).getroot()
    if root.tag != "{http://www.w3.org/2000/svg}svg":
        errors.append("root element is %s, not svg" % root.tag)
    if not root.get("width") or not root.get("height"):
        errors.append("the svg element has no width or height")
    paths = root.findall(".//{http://www.w3.org/2000/svg}path")
    if len(paths) < min_paths:
        errors.append("%d <path> elements (expected at least %d)" % (len(paths), min_paths))
    return errors


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("png", "svg"):
        raise SystemExit(__doc__ or "usage: plot_check.py png|svg FILE ...")
    try:
        errors = (check_png if sys.argv[1] == "png" else check_svg)(sys.argv[2:])
    except (ValueError, OSError, ET.ParseError, zlib.error) as e:
        errors = [str(e)]
    for e in errors:
        print("%s: %s" % (sys.argv[2], e))
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
