// Line charts drawn as SVG by the console's own code: the node's last minutes.

const svgNS = "http://www.w3.org/2000/svg";

function svg(tag, attributes = {}, ...children) {
  const node = document.createElementNS(svgNS, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return node;
}

/** A rounded maximum for an axis: 1, 2 or 5 times a power of ten, at least `value`. */
function niceMaximum(value) {
  if (!(value > 0)) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  return [1, 2, 5, 10].map((step) => step * power).find((candidate) => candidate >= value);
}

const colors = ["#2456c6", "#b3261e", "#1d7a3a", "#8a4fbf", "#c27b00", "#0f7c8c"];

/** A line chart: `series` is [{ name, points: [[time, value or null], …] }], drawn over
 * the times given, with a legend and the axis's top value in `unit`. An element. */
export function lineChart(id, title, unit, series, times) {
  const width = 560;
  const height = 160;
  const left = 44;
  const bottom = 18;
  const top = 8;
  const values = series.flatMap((line) => line.points.map(([, value]) => value)).filter((value) => value !== null && value !== undefined);
  const maximum = niceMaximum(Math.max(0, ...values));
  const first = times[0] ?? 0;
  const last = times[times.length - 1] ?? first + 1;
  const x = (time) => left + ((time - first) / Math.max(last - first, 1)) * (width - left - 4);
  const y = (value) => top + (1 - value / maximum) * (height - top - bottom);
  const chart = svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": title, class: "chart-svg" },
    svg("line", { x1: left, y1: y(0), x2: width - 4, y2: y(0), class: "axis" }),
    svg("line", { x1: left, y1: y(maximum), x2: width - 4, y2: y(maximum), class: "grid" }),
    svg("text", { x: left - 4, y: y(maximum) + 4, "text-anchor": "end", class: "tick" }, `${maximum}`),
    svg("text", { x: left - 4, y: y(0), "text-anchor": "end", class: "tick" }, "0"),
    svg("text", { x: left, y: height - 2, class: "tick" }, times.length ? new Date(first).toISOString().slice(11, 19) : ""),
    svg("text", { x: width - 4, y: height - 2, "text-anchor": "end", class: "tick" }, times.length ? new Date(last).toISOString().slice(11, 19) + " UTC" : ""));
  series.forEach((line, index) => {
    // A gap where a point has no value: the path starts again after it.
    let path = "";
    let drawing = false;
    for (const [time, value] of line.points) {
      if (value === null || value === undefined) { drawing = false; continue; }
      path += `${drawing ? "L" : "M"}${x(time).toFixed(1)},${y(value).toFixed(1)} `;
      drawing = true;
    }
    chart.append(svg("path", { d: path.trim() || "M0,0", class: "series", stroke: colors[index % colors.length], "data-series": line.name }));
  });
  const legend = document.createElement("div");
  legend.className = "legend";
  series.forEach((line, index) => {
    const item = document.createElement("span");
    const swatch = document.createElement("i");
    swatch.style.background = colors[index % colors.length];
    item.append(swatch, line.name);
    legend.append(item);
  });
  const figure = document.createElement("figure");
  figure.className = "chart";
  figure.id = id;
  const caption = document.createElement("figcaption");
  caption.textContent = `${title} (${unit})`;
  figure.append(caption, chart, legend);
  return figure;
}
