/* resource-tracker report: small SVG line charts with a shared time axis.
 * Reads the JSON in #rt-data; hover shows the values at one time on every chart, dragging
 * across a chart zooms all charts to that range, double-click zooms out. No libraries. */
(function () {
  "use strict";
  var SVGNS = "http://www.w3.org/2000/svg";
  var HEIGHT = 210;
  var M = { left: 58, right: 12, top: 10, bottom: 36 };
  var TIME_STEPS = [0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800,
    21600, 43200, 86400, 172800, 604800];

  function pad2(n) { return (n < 10 ? "0" : "") + n; }

  function tzName() {
    var off = -new Date().getTimezoneOffset();
    var sign = off >= 0 ? "+" : "-";
    off = Math.abs(off);
    var text = "UTC" + sign + pad2(Math.floor(off / 60)) + ":" + pad2(off % 60);
    try {
      var zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
      if (zone && zone !== "UTC") { text = zone + ", " + text; }
    } catch (e) { /* no Intl: the offset alone */ }
    return text;
  }

  function fmtDateTime(epoch) {
    var d = new Date(epoch * 1000);
    return d.getFullYear() + "-" + pad2(d.getMonth() + 1) + "-" + pad2(d.getDate()) + " " +
      pad2(d.getHours()) + ":" + pad2(d.getMinutes()) + ":" + pad2(d.getSeconds());
  }

  function fmtClock(epoch, withSeconds, withDate, tenths) {
    var d = new Date(Math.round(epoch * 1000));
    var s = pad2(d.getHours()) + ":" + pad2(d.getMinutes());
    if (withSeconds) { s += ":" + pad2(d.getSeconds()); }
    if (tenths) { s += "." + Math.floor(d.getMilliseconds() / 100); }
    if (withDate) { s = pad2(d.getMonth() + 1) + "-" + pad2(d.getDate()) + " " + s; }
    return s;
  }

  function localTimes() {
    var zone = tzName();
    var nodes = document.querySelectorAll("time.rt-time");
    for (var i = 0; i < nodes.length; i++) {
      var epoch = parseFloat(nodes[i].getAttribute("data-epoch"));
      if (isFinite(epoch)) {
        nodes[i].title = nodes[i].textContent;
        nodes[i].textContent = fmtDateTime(epoch) + " (" + zone + ")";
      }
    }
  }

  /* Three significant digits, no trailing zeros (as resource_tracker.formatting). */
  function fmtNum(v) {
    if (v === null || v === undefined || !isFinite(v)) { return "n/a"; }
    if (Math.abs(v) >= 1000) { return v.toFixed(0); }
    if (v === 0) { return "0"; }
    return String(parseFloat(v.toPrecision(3)));
  }

  /* A value of a chart's unit as the page's numbers read (resource_tracker.formatting:
     quantity, nbytes, rate): each in the unit that fits it, not in the axis unit. */
  function fmtBytes(b) {
    var labels = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"], i = 0;
    while (Math.abs(b) >= 1024 && i < labels.length - 1) { b /= 1024; i++; }
    if (i === 0) { return Math.round(b) + " B"; }
    return (Math.abs(b) < 1000 ? fmtNum(b) : b.toFixed(0)) + " " + labels[i];
  }
  function fmtValue(v, unit) {
    if (v === null || v === undefined || !isFinite(v)) { return "n/a"; }
    if (unit === "mib") { return fmtBytes(v * 1048576); }
    if (unit === "Bps") { return fmtBytes(v) + "/s"; }
    if (unit === "gb") { return fmtBytes(v * 1e9); }
    var shown = Math.round(v * 100) / 100, word = unit === "gpus" ? "GPU" : "core";
    return fmtNum(shown) + " " + (shown === 1 ? word : word + "s");
  }

  /* Divisor and label of the axis unit for values up to maxv. */
  function unitScale(unit, maxv) {
    if (unit === "mib") {
      return maxv >= 1024 ? { div: 1024, label: "GiB" } : { div: 1, label: "MiB" };
    }
    if (unit === "Bps") {
      /* binary units, as everywhere else (resource_tracker.formatting) */
      var labels = ["B/s", "KiB/s", "MiB/s", "GiB/s", "TiB/s"];
      var div = 1, i = 0;
      while (maxv / div >= 1024 && i < labels.length - 1) { div *= 1024; i++; }
      return { div: div, label: labels[i] };
    }
    if (unit === "gb") {  /* disk space: GB (10^9 bytes) from the sampler, shown in GiB */
      return { div: 1.073741824, label: "GiB" };
    }
    if (unit === "gpus") { return { div: 1, label: "GPUs" }; }
    return { div: 1, label: "cores" };
  }

  function niceStep(range, ticks) {
    var raw = range / ticks;
    var p = Math.pow(10, Math.floor(Math.log(raw) / Math.LN10));
    var f = raw / p;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10) * p;
  }

  /* First index i with arr[i] >= x. */
  function lowerBound(arr, x) {
    var lo = 0, hi = arr.length;
    while (lo < hi) {
      var mid = (lo + hi) >> 1;
      if (arr[mid] < x) { lo = mid + 1; } else { hi = mid; }
    }
    return lo;
  }

  function nearest(arr, x) {
    var i = lowerBound(arr, x);
    if (i <= 0) { return 0; }
    if (i >= arr.length) { return arr.length - 1; }
    return (x - arr[i - 1] <= arr[i] - x) ? i - 1 : i;
  }

  function el(name, attrs, parent) {
    var node = document.createElementNS(SVGNS, name);
    for (var k in attrs) {
      if (Object.prototype.hasOwnProperty.call(attrs, k)) { node.setAttribute(k, attrs[k]); }
    }
    if (parent) { parent.appendChild(node); }
    return node;
  }

  function html(name, cls, parent, text) {
    var node = document.createElement(name);
    if (cls) { node.className = cls; }
    if (text !== undefined) { node.textContent = text; }
    if (parent) { parent.appendChild(node); }
    return node;
  }

  function markDone(count) {
    var root = document.documentElement;
    root.setAttribute("data-rt-charts", String(count));
    root.setAttribute("data-rt-rendered-ms", performance.now().toFixed(1));
    fitFrame();
  }

  /* Inside a notebook's srcdoc iframe: grow the frame to the page's height. */
  function fitFrame() {
    try {
      var frame = window.frameElement;
      if (frame) { frame.style.height = (document.documentElement.scrollHeight + 24) + "px"; }
    } catch (e) { /* a cross-origin parent: keep its size */ }
  }

  /* On paper, the folded details are printed open. */
  function openAll() {
    var folds = document.querySelectorAll("details.rt-fold");
    for (var i = 0; i < folds.length; i++) { folds[i].open = true; }
  }
  window.addEventListener("beforeprint", openAll);
  if (window.matchMedia) {
    var printing = window.matchMedia("print");
    var onPrint = function (m) { if (m.matches) { openAll(); } };
    if (printing.addEventListener) { printing.addEventListener("change", onPrint); }
    else if (printing.addListener) { printing.addListener(onPrint); }
  }

  var data;
  try {
    data = JSON.parse(document.getElementById("rt-data").textContent);
  } catch (e) {
    data = { tables: {}, charts: [] };
  }
  localTimes();
  var grid = document.getElementById("rt-chart-grid");
  if (!grid || !data.charts || !data.charts.length) { markDone(0); return; }

  var tables = data.tables;
  var full = [Infinity, -Infinity];
  Object.keys(tables).forEach(function (key) {
    var tab = tables[key];
    var abs = new Float64Array(tab.t.length);
    for (var i = 0; i < abs.length; i++) { abs[i] = tab.t0 + tab.t[i]; }
    tab.abs = abs;
    if (abs.length) {
      full[0] = Math.min(full[0], abs[0]);
      full[1] = Math.max(full[1], abs[abs.length - 1]);
    }
  });
  if (!(full[1] > full[0])) { full[1] = full[0] + 1; }
  var view = { x0: full[0], x1: full[1] };
  var zone = tzName();

  var charts = data.charts.map(function (def) {
    var box = html("div", "rt-chart", grid);
    box.id = "rt-chart-" + def.id;
    html("h3", null, box, def.title);
    var readout = html("div", "rt-readout", box);
    var svg = el("svg", { role: "img", "aria-label": def.title + " over time" }, box);
    var series = def.series.map(function (s) {
      var tab = tables[s.table];
      return { name: s.name, color: s.color, key: s.key, abs: tab.abs, values: tab.s[s.key] };
    });
    var at = html("span", "rt-at", readout, "");
    var vals = series.map(function (s) {
      var key = html("span", "rt-key", readout);
      var sw = html("span", "rt-sw", key);
      sw.style.background = s.color;
      key.appendChild(document.createTextNode(s.name));
      return html("span", "rt-val", key, "");
    });
    var chart = { def: def, box: box, svg: svg, readout: readout, at: at, vals: vals,
      series: series, scale: null, width: 0, cursor: null, sel: null };
    bind(chart);
    return chart;
  });

  function plotWidth(chart) { return chart.width - M.left - M.right; }
  function tToX(chart, t) {
    return M.left + (t - view.x0) / (view.x1 - view.x0) * plotWidth(chart);
  }
  function xToT(chart, x) {
    return view.x0 + (x - M.left) / plotWidth(chart) * (view.x1 - view.x0);
  }

  function draw(chart) {
    var svg = chart.svg;
    var width = Math.max(chart.box.clientWidth - 20, 240);
    chart.width = width;
    svg.setAttribute("width", width);
    svg.setAttribute("height", HEIGHT);
    svg.setAttribute("viewBox", "0 0 " + width + " " + HEIGHT);
    while (svg.firstChild) { svg.removeChild(svg.firstChild); }
    var ph = HEIGHT - M.top - M.bottom;
    var ranges = chart.series.map(function (s) {
      var lo = Math.max(lowerBound(s.abs, view.x0) - 1, 0);
      var hi = Math.min(lowerBound(s.abs, view.x1) + 1, s.abs.length - 1);
      return [lo, hi];
    });
    var ymax = 0;
    chart.series.forEach(function (s, j) {
      for (var i = ranges[j][0]; i <= ranges[j][1]; i++) {
        var v = s.values[i];
        if (v !== null && v > ymax) { ymax = v; }
      }
      s.peak = null;
    });
    var scale = unitScale(chart.def.unit, ymax);
    chart.scale = scale;
    var top = ymax / scale.div;
    if (!(top > 0)) { top = 1; }
    var step = niceStep(top, 4);
    if (scale.label === "B/s" && step < 1) { step = 1; }  /* no 0.25 B/s steps */
    top = Math.ceil(top / step - 1e-9) * step;
    var yOf = function (v) { return M.top + ph - (v / scale.div) / top * ph; };
    // y grid and labels
    for (var y = 0; y <= top + step / 2; y += step) {
      var py = M.top + ph - y / top * ph;
      el("line", { x1: M.left, x2: width - M.right, y1: py, y2: py, "class": "rt-grid-line" }, svg);
      var label = el("text", { x: M.left - 6, y: py + 4, "text-anchor": "end" }, svg);
      label.textContent = fmtNum(y);
    }
    var unit = el("text", { x: 12, y: M.top + ph / 2, "text-anchor": "middle",
      transform: "rotate(-90 12 " + (M.top + ph / 2) + ")", "class": "rt-unit" }, svg);
    unit.textContent = scale.label;
    // time ticks in local time
    var span = view.x1 - view.x0;
    var tstep = TIME_STEPS[TIME_STEPS.length - 1];
    for (var k = 0; k < TIME_STEPS.length; k++) {
      if (span / TIME_STEPS[k] <= Math.max(3, Math.floor(width / 110))) { tstep = TIME_STEPS[k]; break; }
    }
    var offset = -new Date(view.x0 * 1000).getTimezoneOffset() * 60;
    var t = Math.ceil((view.x0 + offset) / tstep) * tstep - offset;
    for (var n = 0; t <= view.x1 && n < 100; t += tstep, n++) {
      var px = tToX(chart, t);
      el("line", { x1: px, x2: px, y1: M.top, y2: M.top + ph, "class": "rt-grid-line" }, svg);
      var tl = el("text", { x: px, y: M.top + ph + 14, "text-anchor": "middle" }, svg);
      tl.textContent = fmtClock(t, tstep < 60, span > 86400, tstep < 1);
    }
    var cap = el("text", { x: width - M.right, y: HEIGHT - 4, "text-anchor": "end", "class": "rt-unit" }, svg);
    cap.textContent = "local time (" + zone + ")";
    el("line", { x1: M.left, x2: width - M.right, y1: M.top + ph, y2: M.top + ph, "class": "rt-axis" }, svg);
    el("line", { x1: M.left, x2: M.left, y1: M.top, y2: M.top + ph, "class": "rt-axis" }, svg);
    // the lines
    var clip = "rt-clip-" + chart.def.id;
    var defs = el("defs", {}, svg);
    var cp = el("clipPath", { id: clip }, defs);
    el("rect", { x: M.left, y: M.top - 2, width: plotWidth(chart), height: ph + 4 }, cp);
    chart.series.forEach(function (s, j) {
      var parts = [];
      var pen = "M";
      var count = 0;
      for (var i = ranges[j][0]; i <= ranges[j][1]; i++) {
        var v = s.values[i];
        if (v === null) { pen = "M"; continue; }
        parts.push(pen + tToX(chart, s.abs[i]).toFixed(1) + " " + yOf(v).toFixed(1));
        pen = "L";
        count++;
      }
      el("path", { d: parts.join(""), fill: "none", stroke: s.color, "stroke-width": 1.6,
        "stroke-linejoin": "round", "clip-path": "url(#" + clip + ")", "class": "rt-line",
        "data-series": s.name, "data-points": count }, svg);
    });
    chart.cursor = el("line", { x1: 0, x2: 0, y1: M.top, y2: M.top + ph, "class": "rt-cursor",
      visibility: "hidden" }, svg);
    chart.sel = el("rect", { x: 0, y: M.top, width: 0, height: ph, "class": "rt-sel",
      visibility: "hidden" }, svg);
    el("rect", { x: M.left, y: M.top, width: plotWidth(chart), height: ph, fill: "transparent",
      "class": "rt-overlay" }, svg);
    showPeaks(chart, ranges);
  }

  /* The readout when nothing is hovered: the peak of each line in view. */
  function showPeaks(chart, ranges) {
    chart.at.textContent = "peak in view:";
    chart.series.forEach(function (s, j) {
      var best = null;
      for (var i = ranges[j][0]; i <= ranges[j][1]; i++) {
        var v = s.values[i];
        if (v !== null && (best === null || v > best)) { best = v; }
      }
      chart.vals[j].textContent = fmtValue(best, chart.def.unit);
    });
    chart.peaks = ranges;
  }

  function hover(t) {
    charts.forEach(function (chart) {
      if (t === null || t < view.x0 || t > view.x1) {
        chart.cursor.setAttribute("visibility", "hidden");
        showPeaks(chart, chart.peaks);
        return;
      }
      var x = tToX(chart, t);
      chart.cursor.setAttribute("x1", x);
      chart.cursor.setAttribute("x2", x);
      chart.cursor.setAttribute("visibility", "visible");
      chart.at.textContent = fmtClock(t, true, view.x1 - view.x0 > 86400);
      chart.series.forEach(function (s, j) {
        var i = nearest(s.abs, t);
        var v = s.values[i];
        chart.vals[j].textContent = fmtValue(v, chart.def.unit);
      });
    });
  }

  function zoom(a, b) {
    if (b < a) { var c = a; a = b; b = c; }
    a = Math.max(a, full[0]);
    b = Math.min(b, full[1]);
    if (b - a < 1e-3) { return; }
    view.x0 = a;
    view.x1 = b;
    drawAll();
  }

  function reset() {
    view.x0 = full[0];
    view.x1 = full[1];
    drawAll();
  }

  function bind(chart) {
    var drag = null;
    function localX(evt) {
      var rect = chart.svg.getBoundingClientRect();
      var x = evt.clientX - rect.left;
      return Math.min(Math.max(x, M.left), chart.width - M.right);
    }
    chart.svg.addEventListener("mousedown", function (evt) {
      if (evt.button !== 0) { return; }
      drag = localX(evt);
      evt.preventDefault();
    });
    chart.svg.addEventListener("mousemove", function (evt) {
      var x = localX(evt);
      hover(xToT(chart, x));
      if (drag !== null) {
        chart.sel.setAttribute("x", Math.min(drag, x));
        chart.sel.setAttribute("width", Math.abs(x - drag));
        chart.sel.setAttribute("visibility", "visible");
      }
    });
    chart.svg.addEventListener("mouseleave", function () {
      hover(null);
      if (drag !== null) { chart.sel.setAttribute("visibility", "hidden"); drag = null; }
    });
    chart.svg.addEventListener("mouseup", function (evt) {
      if (drag === null) { return; }
      var x = localX(evt);
      var start = drag;
      drag = null;
      chart.sel.setAttribute("visibility", "hidden");
      if (Math.abs(x - start) > 4) { zoom(xToT(chart, start), xToT(chart, x)); }
    });
    chart.svg.addEventListener("dblclick", function () { reset(); });
  }

  function drawAll() {
    charts.forEach(draw);
    var root = document.documentElement;
    root.setAttribute("data-rt-view", view.x0.toFixed(3) + " " + view.x1.toFixed(3));
  }

  var resetButton = document.getElementById("rt-reset");
  if (resetButton) { resetButton.addEventListener("click", reset); }
  var resizeTimer = null;
  window.addEventListener("resize", function () {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(function () { drawAll(); fitFrame(); }, 100);
  });
  drawAll();
  markDone(charts.length);
})();
