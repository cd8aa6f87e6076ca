// The usage page's charts over time: tokens and cost per step, stacked by model, agent or
// project, drawn by the vendored uPlot from the JSON in #charts' data-chart attribute
// (sessiontree.web.charts.UsagePage.chart_data). Labels reach the page as text only.
(function () {
  "use strict";
  var box = document.getElementById("charts");
  if (!box || typeof uPlot === "undefined") return;
  var data = JSON.parse(box.getAttribute("data-chart"));
  var COLORS = ["#2f5fd0", "#1f7a3a", "#c0262d", "#9a6a00", "#8a3ab9", "#0f7f8c",
                "#d0662f", "#5a6378"];
  var STEP = { day: 86400, week: 7 * 86400, month: 30 * 86400 };
  var half = STEP[data.period] / 2;

  function tokens(n) {
    var units = [[1e9, "B"], [1e6, "M"], [1e3, "k"]];
    for (var i = 0; i < units.length; i++) {
      if (n >= units[i][0]) return (n / units[i][0]).toFixed(n >= 100 * units[i][0] ? 0 : 1) + units[i][1];
    }
    return String(Math.round(n));
  }
  function dollars(n) {
    return n === 0 ? "$0" : n < 0.01 ? "$" + n.toFixed(4) : "$" + n.toFixed(2);
  }
  function stepName(u, v, si, i) {
    return i == null ? "" : data.steps[i];
  }

  // Stacked bars: series k (most tokens first) is drawn as the sum of series k..n-1, so the
  // first is the whole bar and each later one covers the part below; the legend shows each
  // series' own value.
  function chart(el, key, fmt) {
    var raw = data.series.map(function (s) { return s[key]; });
    var sums = raw.map(function (values) { return values.slice(); });
    for (var k = raw.length - 2; k >= 0; k--) {
      sums[k] = raw[k].map(function (v, i) { return v + sums[k + 1][i]; });
    }
    var order = raw.map(function (_, k) { return k; });
    var bars = uPlot.paths.bars({ size: [0.7, 48], align: 0 });
    var opts = {
      width: Math.max(280, el.clientWidth),
      height: el.clientWidth < 500 ? 220 : 280,
      scales: {
        x: { time: true, range: function (u, lo, hi) { return [lo - half, hi + half]; } },
        y: { range: function (u, lo, hi) { return [0, hi > 0 ? hi * 1.08 : 1]; } }
      },
      axes: [{}, { values: function (u, ticks) { return ticks.map(fmt); }, size: 60 }],
      legend: { live: true },
      cursor: { points: { show: false } },
      series: [{ label: data.period, value: stepName }].concat(order.map(function (k) {
        var color = COLORS[k % COLORS.length];
        return {
          label: data.series[k].label,
          stroke: color,
          fill: color,
          width: 0,
          paths: bars,
          points: { show: false },
          value: function (u, v, si, i) { return i == null ? "" : fmt(raw[k][i]); }
        };
      }))
    };
    var plot = new uPlot(opts, [data.x].concat(order.map(function (k) { return sums[k]; })), el);
    el.setAttribute("data-series", JSON.stringify(order.map(function (k) { return data.series[k].label; })));
    return plot;
  }

  var plots = [
    chart(document.getElementById("chart-tokens"), "tokens", tokens),
    chart(document.getElementById("chart-cost"), "cost", dollars)
  ];
  var pending = 0;
  window.addEventListener("resize", function () {
    clearTimeout(pending);
    pending = setTimeout(function () {
      plots.forEach(function (p) {
        var w = Math.max(280, p.root.parentNode.clientWidth);
        p.setSize({ width: w, height: w < 500 ? 220 : 280 });
      });
    }, 100);
  });
  box.setAttribute("data-drawn", "true");
})();
