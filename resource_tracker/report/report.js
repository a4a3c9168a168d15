/* resource-tracker report: small SVG line charts with a shared time axis.
 * Reads the JSON in #rt-data; hover shows the values at one time on every chart, dragging
 * across a chart zooms all charts to that range, double-click zooms out. No libraries. */
(function () {
  "use strict";
  var SVGNS = "http://www.w3.org/2000/svg";
  var HEIGHT = 210;
  var COMPACT_HEIGHT = 96;
  /* on paper: a chart fills one of two columns of an A4 or Letter page at scale 1 */
  var PRINT_WIDTH = 340;
  var PRINT_HEIGHT = 125;
  var PRINT_WIDTH_MINOR = 215;  /* disk and network: one of three columns */
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
    if (withDate) { s = dayName(epoch) + " " + s; }
    return s;
  }

  var MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

  /* The local day of epoch: "Sep 22". */
  function dayName(epoch) {
    var d = new Date(epoch * 1000);
    return MONTHS[d.getMonth()] + " " + d.getDate();
  }

  /* Whether a and b (epochs) fall on different local days. */
  function otherDay(a, b) {
    return new Date(a * 1000).toDateString() !== new Date(b * 1000).toDateString();
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
    if (Math.abs(v) < 5e-4) { return "0"; }  /* float noise of a zero, not a figure */
    if (Math.abs(v) < 1000) { v = parseFloat(v.toPrecision(3)); }
    if (Math.abs(v) >= 1000) { return v.toFixed(0).replace(/\B(?=(\d{3})+(?!\d))/g, ","); }
    return String(v);
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
      return maxv >= 1.073741824 * 1024 ? { div: 1.073741824 * 1024, label: "TiB" } :
        { div: 1.073741824, label: "GiB" };
    }
    if (unit === "pct") { return { div: 1, label: "%" }; }
    return { div: 1, label: "cores" };
  }

  /* One figure with the unit that fits it (as resource_tracker.formatting.quantity). */
  function fmtQty(v, unit) {
    if (v === null || v === undefined || !isFinite(v)) { return "n/a"; }
    var scale = unitScale(unit, Math.abs(v));
    var shown = v / scale.div;
    if (scale.label === "cores") { shown = Math.round(shown * 100) / 100; }  /* counts: 2 decimals */
    var text = fmtNum(shown);
    if (scale.label === "%") { return text + "%"; }
    if (scale.label === "cores" && text === "1") { return "1 core"; }
    return text + " " + scale.label;
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

  /* A command line breaks between its words ("--epochs" is never cut after its dashes):
   * each word becomes an inline block, broken inside only when wider than the line. */
  function keepWords() {
    var boxes = document.querySelectorAll(".rt-sub, .rt-cmd");
    for (var i = 0; i < boxes.length; i++) {
      var walk = document.createTreeWalker(boxes[i], NodeFilter.SHOW_TEXT), nodes = [], node;
      while ((node = walk.nextNode())) { nodes.push(node); }
      nodes.forEach(wrapWords);
    }
  }

  function wrapWords(node) {
    var parts = node.data.split(/(\s+)/);
    if (parts.length < 2 && !/-/.test(node.data)) { return; }
    var frag = document.createDocumentFragment();
    parts.forEach(function (part) {
      if (!part) { return; }
      if (/^\s+$/.test(part)) { frag.appendChild(document.createTextNode(part)); return; }
      html("span", "rt-w", frag, part);
    });
    node.parentNode.replaceChild(frag, node);
  }

  /* A "Copy" button on each code line meant to be pasted (the @resources(...) line). */
  function copyButtons() {
    var codes = document.querySelectorAll("pre.rt-code");
    for (var i = 0; i < codes.length; i++) { copyButton(codes[i]); }
  }

  function copyButton(pre) {
    var button = html("button", "rt-copy", null, "Copy");
    button.type = "button";
    button.title = "Copy this line";
    button.addEventListener("click", function () {
      var text = pre.querySelector("code").textContent;
      var done = function (ok) {
        button.textContent = ok ? "Copied" : "Select and copy";
        button.setAttribute("data-copied", ok ? "yes" : "no");
      };
      if (navigator.clipboard && navigator.clipboard.writeText) {
        navigator.clipboard.writeText(text).then(function () { done(true); },
          function () { done(selectCopy(pre)); });
      } else {
        done(selectCopy(pre));
      }
    });
    pre.insertBefore(button, pre.firstChild);
  }

  /* The older way: select the line and copy the selection. */
  function selectCopy(pre) {
    var range = document.createRange();
    range.selectNodeContents(pre.querySelector("code"));
    var sel = window.getSelection();
    sel.removeAllRanges();
    sel.addRange(range);
    try { return document.execCommand("copy"); } catch (e) { return false; }
  }

  /* On paper (a one- or two-page summary): the statistics and the run's details are
   * printed open; the other folds print their one-line summary unless opened. */
  var PRINT_OPEN = ["rt-usage", "rt-run"];
  function openForPrint() {
    PRINT_OPEN.forEach(function (id) {
      var fold = document.getElementById(id);
      if (fold) { fold.open = true; }
    });
  }

  /* Calls onPaper(true) when printing starts, onPaper(false) when it ends. */
  function whenPrinting(onPaper) {
    window.addEventListener("beforeprint", function () { onPaper(true); });
    window.addEventListener("afterprint", function () { onPaper(false); });
    if (!window.matchMedia) { return false; }
    var paper = window.matchMedia("print");
    var changed = function (m) { onPaper(m.matches); };
    if (paper.addEventListener) { paper.addEventListener("change", changed); }
    else if (paper.addListener) { paper.addListener(changed); }
    return paper.matches;
  }
  whenPrinting(function (on) { if (on) { openForPrint(); } });

  var data;
  try {
    data = JSON.parse(document.getElementById("rt-data").textContent);
  } catch (e) {
    data = { tables: {}, charts: [] };
  }
  localTimes();
  keepWords();
  copyButtons();
  var grid = document.getElementById("rt-chart-grid");
  if (!grid || !data.charts || !data.charts.length) { markDone(0); return; }

  var tables = data.tables;
  var full = [Infinity, -Infinity];
  Object.keys(tables).forEach(function (key) {
    var tab = tables[key];
    var abs = new Float64Array(tab.t.length);
    for (var i = 0; i < abs.length; i++) { abs[i] = tab.t0 + tab.t[i]; }
    tab.abs = abs;
    tab.down = tab.rows > tab.t.length;  /* points are each interval's lowest and highest */
    if (abs.length) {
      full[0] = Math.min(full[0], abs[0]);
      full[1] = Math.max(full[1], abs[abs.length - 1]);
    }
  });
  if (!(full[1] > full[0])) { full[1] = full[0] + 1; }
  var view = { x0: full[0], x1: full[1] };
  var zone = tzName();
  var printing = false;
  /* drawn on top: the process tree over the machine, marks over both */
  var LAYER = { system: 0, process: 1 };
  var DASHES = ["", "5 3", "1.5 2.5"];
  var MARK_DASH = { ask: "7 3", limit: "3 3", capacity: "1.5 3" };
  /* The axis is the workload's: a line or mark of the context (the machine, the ask, the
   * container's limit) joins it only while at most this many times the process tree's peak,
   * so the process line always fills at least about half the chart's height. */
  var CONTEXT_ROOM = 1.3;

  var charts = data.charts.map(function (def) {
    var box = html("div", def.compact ? "rt-chart rt-minor" : "rt-chart", grid);
    box.id = "rt-chart-" + def.id;
    html("h3", null, box, def.title);
    var legend = html("div", "rt-readout rt-legend", box);
    var at = html("span", "rt-at", legend, "");
    var svg = el("svg", { role: "img", "aria-label": def.title + " over time" }, box);
    var factor = def.factor || 1;
    var series = def.series.map(function (s) {
      var tab = tables[s.table];
      var values = tab.s[s.key];
      var f = s.factor || factor;  /* a series' own scale (the process on the per-GPU chart) */
      if (f !== 1) {
        values = values.map(function (v) { return v === null ? null : v * f; });
      }
      return { name: s.name, role: s.role, dash: s.dash, key: s.key, abs: tab.abs,
        values: values, down: tab.down, stat: s.stat || {}, hidden: false };
    });
    var marks = (def.marks || []).map(function (m) {
      return { name: m.name, role: m.kind, mark: true, value: m.value, hidden: false };
    });
    var chart = { def: def, box: box, svg: svg, legend: legend, at: at, series: series,
      marks: marks, scale: null, width: 0, cursor: null, sel: null, fitAll: false };
    series.concat(marks).forEach(function (item) { legendEntry(chart, item); });
    chart.fit = fitButton(chart);
    bind(chart);
    return chart;
  });

  /* A legend entry: a button that hides or shows its line; its figures follow the view. */
  function legendEntry(chart, item) {
    var key = html("button", "rt-key rt-role-" + item.role, chart.legend);
    key.type = "button";
    key.setAttribute("aria-pressed", "true");
    key.setAttribute("data-series", item.name);
    key.title = "Hide or show this line";
    var sw = html("span", "rt-sw", key);
    if (item.mark || item.dash) { sw.className += " rt-sw-dash"; }
    key.appendChild(document.createTextNode(item.name));
    item.val = html("span", "rt-val", key, "");
    key.addEventListener("click", function () {
      item.hidden = !item.hidden;
      key.setAttribute("aria-pressed", item.hidden ? "false" : "true");
      draw(chart);
    });
  }

  /* "Fit all lines": the chart's axis taken to its highest line or mark, and back to the
   * process tree's; shown only where a line or mark of the context is above the axis. */
  function fitButton(chart) {
    var button = html("button", "rt-button rt-fit-all", null, "Fit all lines");
    chart.box.insertBefore(button, chart.legend);  /* at the title's right, over no figure */
    button.type = "button";
    button.hidden = true;
    button.setAttribute("aria-pressed", "false");
    button.title = "Scale the axis to every line, or back to the process tree's";
    button.addEventListener("click", function () {
      chart.fitAll = !chart.fitAll;
      button.setAttribute("aria-pressed", chart.fitAll ? "true" : "false");
      button.textContent = chart.fitAll ? "Fit the process" : "Fit all lines";
      draw(chart);
    });
    return button;
  }

  function plotWidth(chart) { return chart.width - M.left - M.right; }
  function tToX(chart, t) {
    return M.left + (t - view.x0) / (view.x1 - view.x0) * plotWidth(chart);
  }
  function xToT(chart, x) {
    return view.x0 + (x - M.left) / plotWidth(chart) * (view.x1 - view.x0);
  }

  /* [first, last] index of each series' points in view (one more on each side). */
  function inView(chart) {
    return chart.series.map(function (s) {
      var lo = Math.max(lowerBound(s.abs, view.x0) - 1, 0);
      var hi = Math.min(lowerBound(s.abs, view.x1) + 1, s.abs.length - 1);
      return [lo, hi];
    });
  }

  /* The chart's height: short on paper, and for a chart whose lines are flat (disk space). */
  function chartHeight(chart, ranges) {
    var h = printing ? PRINT_HEIGHT : HEIGHT;
    if (!chart.def.compact) { return h; }
    var flat = chart.series.every(function (s, j) {
      var lo = Infinity, hi = -Infinity;
      for (var i = ranges[j][0]; i <= ranges[j][1]; i++) {
        var v = s.values[i];
        if (v !== null) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
      }
      return !(hi - lo > 0.01 * Math.abs(hi));
    });
    chart.box.classList.toggle("rt-chart-flat", flat);
    return flat ? COMPACT_HEIGHT : h;
  }

  /* The highest value of a series in view (0 when none). */
  function peakOf(s, range) {
    var peak = 0;
    for (var i = range[0]; i <= range[1]; i++) {
      var v = s.values[i];
      if (v !== null && v > peak) { peak = v; }
    }
    return peak;
  }

  /* The axis' top value, and the context's lines and marks left above it: {ymax, above:
   * [{item, peak, room: the peak with a mark's label}]}. The process tree's line sets the axis; another line or mark joins it
   * while at most CONTEXT_ROOM times the process' peak. Every shown line sets it on a
   * chart in % (0-100% always), with "Fit all lines", or when the process is not drawn or
   * stays at 0 in view (a machine's disk traffic beside none of the process). */
  function axisTop(chart, ranges) {
    var items = [], own = 0;
    chart.series.forEach(function (s, j) {
      if (s.hidden) { return; }
      var peak = peakOf(s, ranges[j]);
      items.push({ item: s, peak: peak, room: peak });
      if (s.role === "process") { own = Math.max(own, peak); }
    });
    /* room above a reference line for its label */
    chart.marks.forEach(function (m) {
      if (!m.hidden) { items.push({ item: m, peak: m.value, room: m.value * 1.12 }); }
    });
    var every = chart.fitAll || !(own > 0) || chart.def.unit === "pct";
    var ymax = 0, above = [];
    items.forEach(function (it) {
      if (every || it.item.role === "process" || it.peak <= CONTEXT_ROOM * own) {
        ymax = Math.max(ymax, it.room);
      } else {
        above.push(it);
      }
    });
    return { ymax: ymax, above: above };
  }

  function draw(chart) {
    var svg = chart.svg;
    var width = printing ? (chart.def.compact ? PRINT_WIDTH_MINOR : PRINT_WIDTH) :
      Math.max(chart.box.clientWidth - 20, 240);
    var ranges = inView(chart);
    var height = chartHeight(chart, ranges);
    chart.width = width;
    chart.height = height;
    svg.setAttribute("width", width);
    svg.setAttribute("height", height);
    svg.setAttribute("viewBox", "0 0 " + width + " " + height);
    svg.style.height = printing ? "auto" : height + "px";
    while (svg.firstChild) { svg.removeChild(svg.firstChild); }
    var ph = height - M.top - M.bottom;
    var axis = axisTop(chart, ranges);
    var ymax = axis.ymax;
    if (chart.def.unit === "pct") { ymax = Math.max(ymax, 100); }  /* 0-100%, as nvidia-smi */
    var scale = unitScale(chart.def.unit, ymax);
    chart.scale = scale;
    var top = ymax / scale.div;
    if (!(top > 0)) { top = 1; }
    var step = niceStep(top, ph < 100 ? 2 : 4);
    if (scale.div === 1 && (chart.def.unit === "Bps" || chart.def.unit === "mib")) {
      step = Math.max(step, 1);  /* no steps of a quarter byte */
    }
    top = Math.ceil(top / step - 1e-9) * step;
    chart.yOf = function (v) { return M.top + ph - (v / scale.div) / top * ph; };
    var topValue = top * scale.div;
    /* above the axis even after its rounding up (a mark with its label): named at its top */
    var above = axis.above.filter(function (it) { return it.room > topValue * (1 + 1e-9); });
    for (var y = 0; y <= top + step / 2; y += step) {
      var py = M.top + ph - y / top * ph;
      el("line", { x1: M.left, x2: width - M.right, y1: py, y2: py, "class": "rt-grid-line" }, svg);
      var label = el("text", { x: M.left - 6, y: py + 4, "text-anchor": "end", "class": "rt-tick rt-ytick" }, svg);
      label.textContent = fmtNum(y);
    }
    var unit = el("text", { x: 12, y: M.top + ph / 2, "text-anchor": "middle",
      transform: "rotate(-90 12 " + (M.top + ph / 2) + ")", "class": "rt-unit" }, svg);
    unit.textContent = scale.label;
    timeAxis(chart, svg, width, ph);
    el("line", { x1: M.left, x2: width - M.right, y1: M.top + ph, y2: M.top + ph, "class": "rt-axis" }, svg);
    el("line", { x1: M.left, x2: M.left, y1: M.top, y2: M.top + ph, "class": "rt-axis" }, svg);
    var clip = "rt-clip-" + chart.def.id;
    var defs = el("defs", {}, svg);
    var cp = el("clipPath", { id: clip }, defs);
    el("rect", { x: M.left, y: M.top - 2, width: plotWidth(chart), height: ph + 4 }, cp);
    var order = chart.series.map(function (s, j) { return j; });
    order.sort(function (a, b) {
      return (LAYER[chart.series[a].role] || 0) - (LAYER[chart.series[b].role] || 0) || a - b;
    });
    order.forEach(function (j) { drawSeries(chart, chart.series[j], ranges[j], clip); });
    chart.marks.forEach(function (m) {
      if (above.every(function (it) { return it.item !== m; })) { drawMark(chart, m, clip); }
    });
    drawAbove(chart, above, ph);
    chart.cursor = el("line", { x1: 0, x2: 0, y1: M.top, y2: M.top + ph, "class": "rt-cursor",
      visibility: "hidden" }, svg);
    chart.sel = el("rect", { x: 0, y: M.top, width: 0, height: ph, "class": "rt-sel",
      visibility: "hidden" }, svg);
    el("rect", { x: M.left, y: M.top, width: plotWidth(chart), height: ph, fill: "transparent",
      "class": "rt-overlay" }, svg);
    chart.ranges = ranges;
    showStats(chart);
  }

  /* Time ticks in local time; a tick on another day than the one before it (and the first)
   * carries the date, so runs across midnight or over days read right. */
  function timeAxis(chart, svg, width, ph) {
    var span = view.x1 - view.x0;
    var tstep = TIME_STEPS[TIME_STEPS.length - 1];
    var room = Math.max(3, Math.floor(width / (otherDay(view.x0, view.x1) ? 130 : 110)));
    for (var k = 0; k < TIME_STEPS.length; k++) {
      if (span / TIME_STEPS[k] <= room) { tstep = TIME_STEPS[k]; break; }
    }
    var offset = -new Date(view.x0 * 1000).getTimezoneOffset() * 60;
    var t = Math.ceil((view.x0 + offset) / tstep) * tstep - offset;
    var before = null;
    for (var n = 0; t <= view.x1 && n < 100; t += tstep, n++) {
      var px = tToX(chart, t);
      el("line", { x1: px, x2: px, y1: M.top, y2: M.top + ph, "class": "rt-grid-line" }, svg);
      var dated = before === null ? otherDay(view.x0, view.x1) : otherDay(before, t);
      var text = fmtClock(t, tstep < 60, dated, tstep < 1);
      /* a label that would run past the right edge ends there */
      var last = px + text.length * 3.4 > width - 2;
      var tl = el("text", { x: last ? width - 2 : px, y: M.top + ph + 14,
        "text-anchor": last ? "end" : "middle", "class": "rt-tick rt-xtick" }, svg);
      tl.textContent = text;
      before = t;
    }
    var cap = el("text", { x: width - M.right, y: chart.height - 4, "text-anchor": "end", "class": "rt-unit rt-caption" }, svg);
    cap.textContent = (otherDay(view.x0, view.x1) ? "" : dayName(view.x0) + ", ") +
      "local time (" + zone + ")";
  }

  /* One series: a line through its points; where each point pair is an interval's lowest
   * and highest value (a long run), a band between them under a line along the highest. */
  function drawSeries(chart, s, range, clip) {
    if (s.hidden) { return; }
    var upper = [], lower = [], count = 0, pen = "M";
    var pairs = s.down;
    var lo = pairs ? range[0] - (range[0] % 2) : range[0];
    for (var i = lo; i <= range[1]; i++) {
      var v = s.values[i];
      if (pairs && i + 1 < s.values.length && (i % 2) === 0) {
        var w = s.values[i + 1];
        if (v === null || w === null) { pen = "M"; i++; continue; }
        var x0 = tToX(chart, s.abs[i]).toFixed(1), x1 = tToX(chart, s.abs[i + 1]).toFixed(1);
        var yh = chart.yOf(Math.max(v, w)).toFixed(1), yl = chart.yOf(Math.min(v, w)).toFixed(1);
        upper.push(pen + x0 + " " + yh + "L" + x1 + " " + yh);
        lower.push([x0, x1, yl]);
        pen = "L";
        count += 2;
        i++;
        continue;
      }
      if (v === null) { pen = "M"; continue; }
      upper.push(pen + tToX(chart, s.abs[i]).toFixed(1) + " " + chart.yOf(v).toFixed(1));
      pen = "L";
      count++;
    }
    var style = "stroke:var(--rt-c-" + s.role + ")";
    if (pairs && lower.length) {
      var band = upper.join("").replace(/M/g, "L").replace(/^L/, "M");
      for (var b = lower.length - 1; b >= 0; b--) {
        band += "L" + lower[b][1] + " " + lower[b][2] + "L" + lower[b][0] + " " + lower[b][2];
      }
      el("path", { d: band + "Z", "class": "rt-band rt-role-" + s.role, "clip-path": "url(#" + clip + ")",
        style: "fill:var(--rt-c-" + s.role + ")" }, chart.svg);
    }
    el("path", { d: upper.join(""), fill: "none", style: style,
      "stroke-width": s.role === "process" ? 2 : 1.5, "stroke-dasharray": DASHES[s.dash % 3],
      "stroke-linejoin": "round", "clip-path": "url(#" + clip + ")", "class": "rt-line",
      "data-series": s.name, "data-role": s.role, "data-points": count }, chart.svg);
  }

  /* A reference line across the chart (the ask, the container's limit, the GPUs' memory). */
  function drawMark(chart, m, clip) {
    if (m.hidden) { return; }
    var y = chart.yOf(m.value).toFixed(1);
    el("line", { x1: M.left, x2: chart.width - M.right, y1: y, y2: y, "class": "rt-mark",
      style: "stroke:var(--rt-c-" + m.role + ")", "stroke-dasharray": MARK_DASH[m.role] || "",
      "clip-path": "url(#" + clip + ")", "data-series": m.name, "data-value": m.value }, chart.svg);
    var label = el("text", { x: chart.width - M.right - 4, y: +y - 4, "text-anchor": "end",
      "class": "rt-mark-label", style: "fill:var(--rt-c-" + m.role + ")" }, chart.svg);
    label.textContent = m.name + " " + fmtQty(m.value, chart.def.unit);
  }

  /* The context's lines and marks above the axis, named at its top (right-aligned, one a
   * row, in their colour): "↑ System, max 2.1 GiB", "↑ asked (@resources) 4 GiB". */
  function drawAbove(chart, above, ph) {
    chart.fit.hidden = !chart.fitAll && !above.length;
    var rows = Math.max(1, Math.floor(ph / 13) - 1);
    above.slice(0, rows).forEach(function (it, k) {
      var item = it.item;
      var label = el("text", { x: chart.width - M.right - 4, y: M.top + 11 + 12 * k,
        "text-anchor": "end", "class": "rt-above", "data-series": item.name,
        "data-value": it.peak, style: "fill:var(--rt-c-" + item.role + ")" }, chart.svg);
      /* a line's peak as its legend has it (the run's, from the statistics, when in view) */
      var whole = view.x0 === full[0] && view.x1 === full[1];
      var peak = !item.mark && whole && item.stat.max ? item.stat.max :
        fmtQty(it.peak, chart.def.unit);
      label.textContent = "\u2191 " + item.name + (item.mark ? " " : ", max ") + peak;
    });
  }

  /* min, mean and max of the points in view (null when none). While the whole run is in
   * view the mean and the max are the run's own (as the statistics table shows them). */
  function statsInView(chart, s, range) {
    var lo = null, hi = null, sum = 0, n = 0;
    for (var i = range[0]; i <= range[1]; i++) {
      var v = s.values[i];
      if (v === null) { continue; }
      var t = s.abs[i];
      if (t < view.x0 || t > view.x1) { continue; }
      lo = lo === null || v < lo ? v : lo;
      hi = hi === null || v > hi ? v : hi;
      sum += v;
      n++;
    }
    if (!n) { return null; }
    var unit = chart.def.unit;
    var whole = view.x0 === full[0] && view.x1 === full[1];
    return {
      min: fmtQty(lo, unit),
      mean: whole && s.stat.mean ? s.stat.mean : (s.down ? "≈" : "") + fmtQty(sum / n, unit),
      max: whole && s.stat.max ? s.stat.max : fmtQty(hi, unit)
    };
  }

  /* The legend when nothing is hovered: min, mean and max of each line in view. */
  function showStats(chart) {
    chart.at.textContent = "";
    chart.series.forEach(function (s, j) {
      var st = statsInView(chart, s, chart.ranges[j]);
      s.val.textContent = st === null ? "n/a" : st.min === st.max ? st.max : "";
      if (st !== null && st.min !== st.max) {
        html("span", "rt-min", s.val, "min " + st.min + " · ");
        s.val.appendChild(document.createTextNode("mean " + st.mean + " · max " + st.max));
      }
    });
    chart.marks.forEach(function (m) { m.val.textContent = fmtQty(m.value, chart.def.unit); });
  }

  function hover(t) {
    charts.forEach(function (chart) {
      if (t === null || t < view.x0 || t > view.x1) {
        chart.cursor.setAttribute("visibility", "hidden");
        showStats(chart);
        return;
      }
      var x = tToX(chart, t);
      chart.cursor.setAttribute("x1", x);
      chart.cursor.setAttribute("x2", x);
      chart.cursor.setAttribute("visibility", "visible");
      chart.at.textContent = fmtClock(t, true, otherDay(view.x0, view.x1));
      chart.series.forEach(function (s) {
        var v = s.values[nearest(s.abs, t)];
        s.val.textContent = v === null ? "n/a" : fmtQty(v, chart.def.unit);
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
      var x = (evt.clientX - rect.left) * chart.width / (rect.width || chart.width);
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

  var resetButton = document.getElementById("rt-reset");

  function drawAll() {
    charts.forEach(draw);
    var root = document.documentElement;
    root.setAttribute("data-rt-view", view.x0.toFixed(3) + " " + view.x1.toFixed(3));
    if (resetButton) { resetButton.hidden = view.x0 === full[0] && view.x1 === full[1]; }
  }

  /* On paper: the charts redrawn for a column of the printed page (A4 or Letter), and back. */
  function setPrinting(on) {
    if (printing === on) { return; }
    printing = on;
    drawAll();
  }
  printing = whenPrinting(setPrinting);

  if (resetButton) { resetButton.addEventListener("click", reset); }
  /* The charts take their size from the page's width: a resize that leaves it alone (a
   * phone's address bar hiding as the page scrolls) redraws nothing. */
  var resizeTimer = null, drawnWidth = document.documentElement.clientWidth;
  window.addEventListener("resize", function () {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(function () {
      var width = document.documentElement.clientWidth;
      if (!printing && width !== drawnWidth) { drawnWidth = width; drawAll(); }
      fitFrame();
    }, 100);
  });
  drawAll();
  markDone(charts.length);
})();
