"""The log-scale SVG bar chart."""

import math


def fmt_num(v):
    if v >= 100:
        return f"{v:.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


COLORS = {"native": "#4c72b0", "flatux": "#dd8452", "flatux-rw": "#e5ae38", "flatux-p0": "#937860",
          "flatux-img": "#8172b3", "flatux-img-rw": "#da8bc3", "uml": "#55a868", "proot": "#c44e52"}


def esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def write_chart(path, rows, targets, cells, title, subtitle, row_labels, target_labels):
    """Horizontal grouped bars, microseconds per operation on a log axis.

    cells[row][target]: "median_us" (None when not run), "status",
    "contended"; row_labels and target_labels: what the axis and legend say."""
    values = [cells[r][t]["median_us"] for r in rows for t in targets
              if cells[r][t]["median_us"] is not None]
    lo = math.floor(math.log10(min(values))) if values else -1
    hi = math.ceil(math.log10(max(values))) if values else 3
    if hi <= lo:
        hi = lo + 1
    bar_h, gap = 9, 12
    group_h = bar_h * len(targets) + gap
    left, right, top = 230, 70, 92
    plot_w = 640
    width = left + plot_w + right
    plot_h = group_h * len(rows)
    height = top + plot_h + 56

    def x_of(v):
        return left + (math.log10(v) - lo) / (hi - lo) * plot_w

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="DejaVu Sans, Arial, sans-serif">',
           f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
           f'<text x="{left}" y="22" font-size="15" font-weight="bold">{esc(title)}</text>',
           f'<text x="{left}" y="40" font-size="11" fill="#444">{esc(subtitle)}</text>']
    # Legend.
    lx = left
    for t in targets:
        out.append(f'<rect x="{lx}" y="52" width="12" height="12" fill="{COLORS[t]}"/>')
        out.append(f'<text x="{lx + 17}" y="62" font-size="12">{esc(target_labels[t])}</text>')
        lx += 95
    # Grid: decades labelled, 2..9 as faint lines.
    for e in range(lo, hi + 1):
        x = x_of(10 ** e)
        out.append(f'<line x1="{x:.1f}" y1="{top - 4}" x2="{x:.1f}" y2="{top + plot_h}" '
                   f'stroke="#999" stroke-width="0.8"/>')
        label = f"{10 ** e:g}" if -3 <= e <= 5 else f"1e{e}"
        out.append(f'<text x="{x:.1f}" y="{top + plot_h + 16}" font-size="11" '
                   f'text-anchor="middle">{label}</text>')
        if e < hi:
            for m in range(2, 10):
                xm = x_of(m * 10 ** e)
                out.append(f'<line x1="{xm:.1f}" y1="{top}" x2="{xm:.1f}" y2="{top + plot_h}" '
                           f'stroke="#e4e4e4" stroke-width="0.6"/>')
    out.append(f'<text x="{left + plot_w / 2:.0f}" y="{top + plot_h + 38}" font-size="12" '
               f'text-anchor="middle">microseconds per operation, log scale (shorter is '
               f'faster)' + ('; * measured while other processes used the CPUs'
                               if any(cells[r][t].get("contended") for r in rows for t in targets)
                               else '') + '</text>')
    for i, r in enumerate(rows):
        y0 = top + i * group_h
        if i % 2 == 1:
            out.append(f'<rect x="0" y="{y0 - gap / 2:.1f}" width="{left + plot_w}" '
                       f'height="{group_h}" fill="#f4f6fa"/>')
        label = row_labels[r]
        out.append(f'<text x="{left - 8}" y="{y0 + bar_h * len(targets) / 2 + 4:.1f}" '
                   f'font-size="12" text-anchor="end">{esc(label)}</text>')
        for j, t in enumerate(targets):
            y = y0 + j * bar_h
            v = cells[r][t]["median_us"]
            if v is None:
                # The reason up to its errno text: "fork: ENOSYS", "timed out".
                why = cells[r][t]["status"].removeprefix("not run: ").split(" (")[0][:70]
                out.append(f'<text x="{left + 4}" y="{y + bar_h - 1.5}" font-size="8.5" '
                           f'fill="{COLORS[t]}">{esc(target_labels[t])}: not run: '
                           f'{esc(why)}</text>')
                continue
            x = x_of(v)
            out.append(f'<rect x="{left}" y="{y}" width="{max(x - left, 1):.1f}" '
                       f'height="{bar_h - 1}" fill="{COLORS[t]}"/>')
            mark = "*" if cells[r][t].get("contended") else ""
            out.append(f'<text x="{x + 3:.1f}" y="{y + bar_h - 1.5}" font-size="8.5" '
                       f'fill="#333">{fmt_num(v)}{mark}</text>')
    out.append(f'<line x1="{left}" y1="{top - 4}" x2="{left}" y2="{top + plot_h}" '
               f'stroke="#333" stroke-width="1"/>')
    out.append("</svg>")
    path.write_text("\n".join(out) + "\n")
