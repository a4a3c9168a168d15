/* resource-tracker dashboard: per step, small SVG charts of one figure per run over time,
 * the ask as a dashed line, anomalies circled, the Theil-Sen trend dashed (projected to
 * where it reaches the ask). Reads the JSON in #rt-data. No libraries. */
(function () {
  "use strict";
  var SVGNS = "http://www.w3.org/2000/svg";
  var HEIGHT = 190;
  var M = { left: 58, right: 12, top: 10, bottom: 30 };

  function pad2(n) { return (n < 10 ? "0" : "") + n; }
  function fmtDate(epoch, withTime, withSeconds) {
    var d = new Date(epoch * 1000);
    var s = pad2(d.getMonth() + 1) + "-" + pad2(d.getDate());
    if (withTime) { s += " " + pad2(d.getHours()) + ":" + pad2(d.getMinutes()); }
    return withSeconds ? s + ":" + pad2(d.getSeconds()) : s;
  }
  /* The time axis' labels: as many as fit side by side without touching (measured: a label
     is 'MM-DD HH:MM:SS' at most), none repeated; one run: its own time alone. */
  function xTicks(svg, t, runs, x0, x1, xOf, pw, y) {
    var withTime = (x1 - x0) < 4 * 86400, withSeconds = (x1 - x0) < 3600;
    var add = function (v, anchor) {
      var node = el("text", { x: xOf(v), y: y, "text-anchor": anchor, "class": "rt-xtick" }, svg);
      node.textContent = fmtDate(v, withTime, withSeconds);
      return node;
    };
    if (runs === 1) { add(t[0], "middle"); return; }
    var probe = add(x0, "start");
    var wide = probe.getComputedTextLength() || 7 * probe.textContent.length;
    /* a middle label needs wide + gap to the next one and 1.5 wide from the start label */
    var ticks = Math.max(1, Math.min(6, Math.floor(pw / (1.5 * wide + 12))));
    var last = probe.textContent;
    for (var k = 1; k <= ticks; k++) {
      var v = x0 + (x1 - x0) * k / ticks;
      if (fmtDate(v, withTime, withSeconds) === last) { continue; }
      last = add(v, k === ticks ? "end" : "middle").textContent;
    }
  }
  function fmtNum(v) {
    if (v === null || v === undefined || !isFinite(v)) { return "n/a"; }
    if (Math.abs(v) >= 1000) { return v.toFixed(0); }
    if (v === 0) { return "0"; }
    if (Math.abs(v) < 0.001) { return v.toExponential(1); }
    return String(parseFloat(v.toPrecision(3)));
  }
  function unitScale(unit, maxv) {
    if (unit === "mib") { return maxv >= 1024 ? { div: 1024, label: "GiB" } : { div: 1, label: "MiB" }; }
    if (unit === "s") {
      if (maxv >= 7200) { return { div: 3600, label: "h" }; }
      return maxv >= 120 ? { div: 60, label: "min" } : { div: 1, label: "s" };
    }
    if (unit === "usd") { return { div: 1, label: "USD" }; }
    if (unit === "gpus") { return { div: 1, label: "GPUs" }; }
    return { div: 1, label: "cores" };
  }
  function niceStep(range, ticks) {
    var raw = range / ticks;
    var mag = Math.pow(10, Math.floor(Math.log(raw) / Math.LN10));
    var steps = [1, 2, 2.5, 5, 10];
    for (var i = 0; i < steps.length; i++) { if (steps[i] * mag >= raw) { return steps[i] * mag; } }
    return 10 * mag;
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
  function localTimes() {
    var nodes = document.querySelectorAll("time.rt-time");
    for (var i = 0; i < nodes.length; i++) {
      var epoch = parseFloat(nodes[i].getAttribute("data-epoch"));
      if (isFinite(epoch)) {
        var d = new Date(epoch * 1000);
        nodes[i].title = nodes[i].textContent;
        nodes[i].textContent = d.getFullYear() + "-" + fmtDate(epoch, true);
      }
    }
  }

  /* The top of the y axis: the highest value, ask, limit or projected trend in view. */
  function topOf(def) {
    var top = 0;
    [def.v, def.peak, def.ask, def.limit].forEach(function (arr) {
      if (!arr) { return; }
      for (var i = 0; i < arr.length; i++) { if (arr[i] !== null && arr[i] > top) { top = arr[i]; } }
    });
    return top;
  }

  /* The fitted trend's points: from the first drawn run to the newest, then on to the
   * crossing (runs ahead at the runs' mean spacing). */
  function trendPoints(step, def) {
    var tr = def.trend;
    if (!tr) { return null; }
    var t = step.t, n = t.length;
    var spacing = n > 1 ? (t[n - 1] - t[0]) / Math.max(step.total - 1, 1) : 86400;
    var ahead = tr.to_line !== null ? tr.to_line : 0;
    var first = -(tr.runs - 1);
    return [
      [t[n - 1] + first * spacing, tr.level * Math.pow(1 + tr.growth, first)],
      [t[n - 1], tr.level],
      [t[n - 1] + ahead * spacing, tr.level * Math.pow(1 + tr.growth, ahead)]
    ];
  }

  function draw(step, def, box) {
    var svg = box.querySelector("svg");
    var width = Math.max(box.clientWidth - 20, 200);
    svg.setAttribute("width", width);
    svg.setAttribute("height", HEIGHT);
    svg.setAttribute("viewBox", "0 0 " + width + " " + HEIGHT);
    while (svg.firstChild) { svg.removeChild(svg.firstChild); }
    var t = step.t, n = t.length;
    var trend = trendPoints(step, def);
    var x0 = t[0], x1 = t[n - 1];
    var ymax = topOf(def);
    if (trend) {
      x0 = Math.min(x0, trend[0][0]);
      x1 = Math.max(x1, trend[2][0]);
      ymax = Math.max(ymax, Math.min(trend[2][1], ymax * 2));
    }
    if (!(x1 > x0)) { x1 = x0 + 1; x0 -= 1; }
    var scale = unitScale(def.unit, ymax);
    var top = ymax / scale.div;
    if (!(top > 0)) { top = 1; }
    var ystep = niceStep(top, 4);
    top = Math.ceil(top / ystep - 1e-9) * ystep;
    var pw = width - M.left - M.right, ph = HEIGHT - M.top - M.bottom;
    var xOf = function (v) { return M.left + (v - x0) / (x1 - x0) * pw; };
    var yOf = function (v) { return M.top + ph - Math.min(v / scale.div / top, 1.05) * ph; };
    for (var y = 0; y <= top + ystep / 2; y += ystep) {
      var py = M.top + ph - y / top * ph;
      el("line", { x1: M.left, x2: width - M.right, y1: py, y2: py, "class": "rt-grid-line" }, svg);
      el("text", { x: M.left - 6, y: py + 4, "text-anchor": "end" }, svg).textContent = fmtNum(y);
    }
    el("text", { x: 12, y: M.top + ph / 2, "text-anchor": "middle", "class": "rt-unit",
      transform: "rotate(-90 12 " + (M.top + ph / 2) + ")" }, svg).textContent = scale.label;
    xTicks(svg, t, trend ? 2 : n, x0, x1, xOf, pw, M.top + ph + 16);
    el("line", { x1: M.left, x2: width - M.right, y1: M.top + ph, y2: M.top + ph, "class": "rt-axis" }, svg);
    el("line", { x1: M.left, x2: M.left, y1: M.top, y2: M.top + ph, "class": "rt-axis" }, svg);
    function path(arr, cls) {
      if (!arr) { return; }
      var d = "", pen = "M";
      for (var i = 0; i < n; i++) {
        if (arr[i] === null) { pen = "M"; continue; }
        d += pen + xOf(t[i]).toFixed(1) + " " + yOf(arr[i]).toFixed(1);
        pen = "L";
      }
      if (d) { el("path", { d: d, "class": cls }, svg); }
    }
    path(def.ask, "rt-ask");
    path(def.limit, "rt-limit");
    /* the newest ask and limit go on to the right edge (where the trend is projected) */
    [[def.ask, "rt-ask"], [def.limit, "rt-limit"]].forEach(function (pair) {
      var last = pair[0] ? pair[0][n - 1] : null;
      if (last !== null && last !== undefined && x1 > t[n - 1]) {
        el("path", { d: "M" + xOf(t[n - 1]).toFixed(1) + " " + yOf(last).toFixed(1) + "L" +
          xOf(x1).toFixed(1) + " " + yOf(last).toFixed(1), "class": pair[1] }, svg);
      }
    });
    if (def.peak) { path(def.peak, "rt-line rt-peak"); }
    var line = el("path", { d: "", fill: "none", stroke: "var(--rt-accent)", "stroke-width": 1.4, "class": "rt-line" }, svg);
    var d = "", pen = "M";
    for (var i = 0; i < n; i++) {
      if (def.v[i] === null) { pen = "M"; continue; }
      d += pen + xOf(t[i]).toFixed(1) + " " + yOf(def.v[i]).toFixed(1);
      pen = "L";
    }
    line.setAttribute("d", d);
    if (trend) {
      var pts = trend.map(function (p) { return xOf(p[0]).toFixed(1) + " " + yOf(p[1]).toFixed(1); });
      el("path", { d: "M" + pts.join("L"), "class": "rt-fit" }, svg);
    }
    if (n <= 80) {  /* dots (with their run id on hover) while they stay apart */
      for (var j = 0; j < n; j++) {
        if (def.v[j] === null) { continue; }
        var dot = el("circle", { cx: xOf(t[j]), cy: yOf(def.v[j]), r: 2.5,
          "class": "rt-dot rt-dot-" + step.status[j] }, svg);
        el("title", {}, dot).textContent = step.runs[j] + " (" + step.status[j] + "): " +
          fmtNum(def.v[j] / scale.div) + " " + scale.label;
      }
    }
    var labelled = -Infinity;
    step.anomalies.forEach(function (a) {
      if (a.metric !== METRIC[def.id] || def.v[a.i] === null) { return; }
      var cx = xOf(t[a.i]), cy = yOf(def.v[a.i]);
      var ring = el("circle", { cx: cx, cy: cy, r: 7, "class": "rt-anomaly", "data-run": a.run }, svg);
      el("title", {}, ring).textContent = a.run + ": " + a.msg;
      if (cx - labelled < 56) { return; }  /* rings close together: one label */
      labelled = cx;
      var label = el("text", { x: Math.min(cx + 9, width - M.right), y: Math.max(cy - 8, M.top + 8),
        "text-anchor": cx + 60 > width ? "end" : "start", "class": "rt-anomaly-label" }, svg);
      label.textContent = "changed";
    });
  }

  var METRIC = { memory: "memory_peak_mib", cpu: "cpu_mean_cores", duration: "duration_s",
    vram: "vram_peak_mib", gpu: "gpu_peak" };

  var data;
  try {
    data = JSON.parse(document.getElementById("rt-data").textContent);
  } catch (e) {
    data = { steps: [] };
  }
  localTimes();
  var drawn = [];
  data.steps.forEach(function (step) {
    var grid = document.getElementById(step.id + "-charts");
    if (!grid || !step.t.length) { return; }
    step.charts.forEach(function (def) {
      var box = html("div", "rt-chart", grid);
      box.id = step.id + "-" + def.id;
      html("h3", null, box, def.title);
      var legend = html("div", "rt-readout", box);
      legend.textContent = step.total > step.t.length ?
        step.t.length + " of " + step.total + " runs drawn (every anomaly kept)" :
        step.total + (step.total === 1 ? " run" : " runs");
      el("svg", { role: "img", "aria-label": def.title + " per run" }, box);
      drawn.push([step, def, box]);
    });
  });
  function drawAll() { drawn.forEach(function (c) { draw(c[0], c[1], c[2]); }); }
  drawAll();
  /* The charts take their size from the page's width: a resize that leaves it alone redraws
   * nothing. */
  var resizeTimer = null, drawnWidth = document.documentElement.clientWidth;
  window.addEventListener("resize", function () {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(function () {
      var width = document.documentElement.clientWidth;
      if (width !== drawnWidth) { drawnWidth = width; drawAll(); }
    }, 100);
  });
  var root = document.documentElement;
  root.setAttribute("data-rt-charts", String(drawn.length));
  root.setAttribute("data-rt-rendered-ms", performance.now().toFixed(1));
})();
