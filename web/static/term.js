// The course term on the student page: every <time data-local> shown again in the
// viewer's own time zone (named), those put in later too (a verdict's panel), and every
// [data-countdown] counting down to its date; when a countdown ends (the cooldown is
// over, the due date passed) the page reloads once, so the form and the rules shown are
// those of the new moment.
(function () {
  "use strict";
  var zone = "";
  try { zone = Intl.DateTimeFormat().resolvedOptions().timeZone || ""; } catch (e) { zone = ""; }

  function local(iso) {
    var at = new Date(iso);
    if (isNaN(at.getTime())) { return null; }
    var text = at.toLocaleString(undefined, {
      weekday: "short", year: "numeric", month: "short", day: "numeric",
      hour: "2-digit", minute: "2-digit", timeZoneName: "short"
    });
    return zone && zone !== "UTC" ? text + " (" + zone + ")" : text;
  }

  function span(seconds) {
    var s = Math.max(0, Math.floor(seconds));
    var d = Math.floor(s / 86400), h = Math.floor((s % 86400) / 3600);
    var m = Math.floor((s % 3600) / 60), r = s % 60;
    if (d > 0) { return d + " d " + h + " h " + m + " min"; }
    if (h > 0) { return h + " h " + m + " min " + r + " s"; }
    if (m > 0) { return m + " min " + r + " s"; }
    return r + " s";
  }

  function pad(n) { return (n < 10 ? "0" : "") + n; }

  // The instructor's forms: dates entered in the browser's zone (named, and sent as tz).
  function localInputs() {
    if (!zone) { return; }
    document.querySelectorAll("input[data-tz]").forEach(function (el) { el.value = zone; });
    document.querySelectorAll(".tz-name").forEach(function (el) { el.textContent = zone; });
    document.querySelectorAll("input[type=datetime-local][data-utc]").forEach(function (el) {
      var iso = el.getAttribute("data-utc");
      if (!iso) { return; }
      var at = new Date(iso);
      if (isNaN(at.getTime())) { return; }
      el.value = at.getFullYear() + "-" + pad(at.getMonth() + 1) + "-" + pad(at.getDate()) +
        "T" + pad(at.getHours()) + ":" + pad(at.getMinutes());
    });
  }

  // Each <time data-local> once: those on the page, and those that come later (the
  // result panel the page's other script puts in when a verdict arrives).
  function localize(root) {
    root.querySelectorAll("time[data-local]:not([data-localized])").forEach(function (el) {
      el.setAttribute("data-localized", "");
      var text = local(el.getAttribute("datetime"));
      if (text) { el.title = el.textContent; el.textContent = text; }
    });
  }

  function start() {
    localInputs();
    localize(document);
    if (window.MutationObserver) {
      new MutationObserver(function (records) {
        var added = records.some(function (r) {
          return Array.prototype.some.call(r.addedNodes, function (n) { return n.nodeType === 1; });
        });
        if (added) { localize(document); }
      }).observe(document.body, {childList: true, subtree: true});
    }
    var counters = Array.prototype.slice.call(document.querySelectorAll("[data-countdown]"));
    if (!counters.length) { return; }
    var reloaded = false;
    var loadedAt = Date.now();
    function tick() {
      var now = Date.now();
      counters.forEach(function (el) {
        var left = (new Date(el.getAttribute("data-countdown")).getTime() - now) / 1000;
        el.textContent = left > 0 ? span(left) : "now";
        el.setAttribute("data-seconds-left", String(Math.max(0, Math.ceil(left))));
        var wasAhead = new Date(el.getAttribute("data-countdown")).getTime() > loadedAt;
        if (left <= 0 && wasAhead && !reloaded) {
          reloaded = true;
          window.setTimeout(function () { window.location.reload(); }, 1000);
        }
      });
    }
    tick();
    window.setInterval(tick, 1000);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
}());
