// The transcript page (sessiontree.web.transcript_routes): earlier turns on demand, live
// updates over server-sent events, and the context-size chart (uPlot). Served by the viewer
// itself; reads only this server (the page's Content-Security-Policy allows nothing else).
(function () {
  "use strict";
  var box = document.getElementById("transcript");
  if (!box) { return; }

  function fragment(html) {
    var t = document.createElement("template");
    t.innerHTML = html;
    return t.content;
  }

  // ---- open at the leaf (unless the address names a place)
  if (!window.location.hash) {
    var leafBadge = box.querySelector(".badge.leaf");
    var target = leafBadge ? leafBadge.closest(".item") : box.lastElementChild;
    if (target) { target.scrollIntoView({ block: "end" }); }
  }

  // ---- earlier turns, inserted above without leaving the page
  var earlier = document.getElementById("earlier");
  if (earlier) {
    earlier.addEventListener("click", function (ev) {
      ev.preventDefault();
      var first = box.querySelector("section.turn");
      var before = first ? first.getAttribute("data-start") : "";
      var url = earlier.getAttribute("data-part") + encodeURIComponent(before);
      earlier.textContent = "loading…";
      fetch(url, { headers: { "Accept": "text/html" } }).then(function (r) {
        if (!r.ok) { throw new Error(r.status); }
        var more = r.headers.get("X-Has-Before") === "1";
        return r.text().then(function (html) {
          var oldHeight = document.documentElement.scrollHeight;
          box.insertBefore(fragment(html), box.firstChild);
          window.scrollBy(0, document.documentElement.scrollHeight - oldHeight);
          if (more) { earlier.textContent = "↑ earlier turns"; } else { earlier.remove(); }
        });
      }).catch(function () { window.location = earlier.href; });
    });
  }

  // ---- live: redraw the newest turn and add new ones when the session changes
  var live = document.getElementById("live");
  var busy = false, again = false;
  function atBottom() {
    return window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 40;
  }
  function update() {
    if (busy) { again = true; return; }
    busy = true;
    var turns = box.querySelectorAll("section.turn");
    var last = turns.length ? turns[turns.length - 1].getAttribute("data-start") : null;
    var url = box.getAttribute("data-part") + (last ? "?after_turn=" + encodeURIComponent(last) : "");
    var follow = atBottom();
    fetch(url, { headers: { "Accept": "text/html" } }).then(function (r) {
      if (r.status === 400 || r.status === 404) {
        // the newest turn is no longer on the leaf's branch: draw the newest page again
        return fetch(box.getAttribute("data-part")).then(function (r2) { return r2.text(); })
          .then(function (html) { box.replaceChildren(fragment(html)); });
      }
      return r.text().then(function (html) {
        var part = fragment(html);
        if (last) {
          var old = document.getElementById("t-" + last);
          var fresh = part.firstElementChild;
          if (old && fresh && fresh.getAttribute("data-start") === last) {
            old.replaceWith(fresh);
          }
        }
        box.appendChild(part);
      });
    }).then(function () {
      box.setAttribute("data-updated", String(Date.now()));
      if (follow) { window.scrollTo(0, document.documentElement.scrollHeight); }
    }).finally(function () {
      busy = false;
      if (again) { again = false; update(); }
    });
  }
  if (box.getAttribute("data-live") === "1" && window.EventSource) {
    var source = new EventSource(box.getAttribute("data-events"));
    source.addEventListener("open", function () { if (live) { live.setAttribute("data-state", "on"); } });
    source.addEventListener("error", function () { if (live) { live.setAttribute("data-state", "reconnecting"); } });
    source.addEventListener("change", update);
  }

  // ---- the context size over the model calls, compactions dashed
  var chartBox = document.getElementById("context-chart");
  if (chartBox && window.uPlot) {
    var data = JSON.parse(chartBox.getAttribute("data-series"));
    var marks = data.compactions || [];
    var drawMarks = function (u) {
      var ctx = u.ctx;
      ctx.save();
      ctx.strokeStyle = "#8a3ab9";
      ctx.lineWidth = 2 * devicePixelRatio;
      ctx.setLineDash([6 * devicePixelRatio, 4 * devicePixelRatio]);
      marks.forEach(function (x) {
        var px = Math.round(u.valToPos(x - 0.5, "x", true));
        ctx.beginPath();
        ctx.moveTo(px, u.bbox.top);
        ctx.lineTo(px, u.bbox.top + u.bbox.height);
        ctx.stroke();
      });
      ctx.restore();
    };
    var size = function () {
      return { width: Math.max(280, Math.min(chartBox.clientWidth || 600, 980)), height: 170 };
    };
    var plot = new uPlot({
      width: size().width,
      height: size().height,
      cursor: { drag: { x: false, y: false } },
      legend: { show: true },
      scales: { x: { time: false } },
      axes: [{ label: "model call" }, { label: "tokens", size: 60 }],
      series: [
        { label: "call" },
        { label: "context tokens", stroke: "#2f5fd0", fill: "rgba(47,95,208,.12)", width: 1.5 },
      ],
      hooks: { draw: [drawMarks] },
    }, [data.x, data.y], chartBox);
    chartBox.setAttribute("data-drawn", String(marks.length));
    window.addEventListener("resize", function () { plot.setSize(size()); });
  }
})();
