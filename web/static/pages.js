// The pages' own script (no third-party code): the live status of a submission on the
// student page (long-polling the page's status endpoint), the grade sent to the LMS
// (polling the panel's endpoint until the LMS has it or it failed), and the progress of
// a class upload or of a package's build.
// Everything works without it: the pages then show a "Refresh" link.
(function () {
  "use strict";

  function swap(id, html) {
    const old = document.getElementById(id);
    if (!old || !html) return;
    const box = document.createElement("div");
    box.innerHTML = html;  // rendered by the judge's templates (escaped there)
    const fresh = box.firstElementChild;
    if (fresh) old.replaceWith(fresh);
  }

  // Put the children and data of a freshly rendered element into the one on the page
  // (which stays: a live region keeps being announced).
  function refill(id, html) {
    const old = document.getElementById(id);
    if (!old || !html) return null;
    const box = document.createElement("div");
    box.innerHTML = html;  // rendered by the judge's templates (escaped there)
    const fresh = box.firstElementChild;
    if (!fresh) return null;
    for (const name of Object.keys(old.dataset)) delete old.dataset[name];
    Object.assign(old.dataset, fresh.dataset);
    old.replaceChildren(...fresh.childNodes);
    return old;
  }

  // The "Grade in your course" panel, while its score is on its way to the LMS: ask
  // the panel's endpoint again (every 2 s, then less often, up to every 10 s) until the
  // score is delivered, failed, refused or cancelled, for at most 5 minutes. "not-sent"
  // (no score opened yet) is waited through only for 30 s after a verdict arrived (a
  // sample run opens none).
  const SCORE_FIRST_MS = 2000, SCORE_MAX_MS = 10000, SCORE_FOR_MS = 5 * 60 * 1000;
  const NOT_SENT_FOR_MS = 30 * 1000;
  let scoreRound = 0;
  function followScore(afterVerdict) {
    const panel = document.getElementById("lms-grade-section");
    if (!panel || !panel.dataset.scoreUrl) return;
    const round = ++scoreRound;  // a newer verdict restarts the following
    const until = Date.now() + SCORE_FOR_MS;
    const notSentUntil = afterVerdict ? Date.now() + NOT_SENT_FOR_MS : 0;
    let delay = SCORE_FIRST_MS;
    function waiting(state) {
      return state === "pending" || (state === "not-sent" && Date.now() < notSentUntil);
    }
    function again() {
      if (round !== scoreRound || Date.now() > until) return;
      window.setTimeout(ask, delay);
      delay = Math.min(SCORE_MAX_MS, delay * 1.5);
    }
    function ask() {
      if (round !== scoreRound) return;
      fetch(panel.dataset.scoreUrl, {headers: {"Accept": "application/json"}, cache: "no-store"})
        .then((r) => {
          if (r.status === 401 || r.status === 403 || r.status === 404) throw new Error("stop");
          if (!r.ok) throw new Error("retry");
          return r.json();
        })
        .then((body) => {
          if (round !== scoreRound) return;
          refill("lms-grade-section", body.score_html);
          if (waiting(body.state)) again();
        })
        .catch((err) => { if (err.message !== "stop") again(); });
    }
    if (waiting(panel.dataset.state)) again();
  }

  function watchSubmission(el) {
    const url = el.dataset.statusUrl;
    const text = document.getElementById("status-text");
    let failures = 0;
    function again(delay) { window.setTimeout(poll, delay); }
    function poll() {
      fetch(url + "?wait=25", {headers: {"Accept": "application/json"}, cache: "no-store"})
        .then((r) => {
          if (r.status === 401 || r.status === 403 || r.status === 404) throw new Error("stop");
          if (!r.ok) throw new Error("retry");
          return r.json();
        })
        .then((body) => {
          failures = 0;
          el.dataset.status = body.status;
          if (text) text.textContent = body.status;
          if (body.done) {
            swap("result", body.result_html);
            refill("lms-grade-section", body.score_html);
            followScore(true);
            swap("history", body.history_html);
          } else {
            again(0);
          }
        })
        .catch((err) => {
          if (err.message === "stop") return;
          failures += 1;
          again(Math.min(30000, 1000 * 2 ** failures));
        });
    }
    poll();
  }

  // A page whose progress panel names a JSON endpoint: poll it, show its counts, and
  // load the page again once the endpoint says it is done.
  function watchProgress(el, show) {
    const url = el.dataset.progressUrl;
    function poll() {
      fetch(url, {headers: {"Accept": "application/json"}, cache: "no-store"})
        .then((r) => (r.ok ? r.json() : Promise.reject(new Error(String(r.status)))))
        .then((body) => {
          show(body);
          if (body.done) window.location.reload();
          else window.setTimeout(poll, 2000);
        })
        .catch(() => window.setTimeout(poll, 5000));
    }
    poll();
  }

  function setText(pairs) {
    for (const [id, value] of pairs) {
      const node = document.getElementById(id);
      if (node) node.textContent = String(value);
    }
  }

  function showBatch(body) {
    const bar = document.getElementById("batch-bar");
    if (bar) bar.value = body.graded;
    setText([["batch-graded", body.graded], ["batch-running", body.counts.running],
      ["batch-queued", body.counts.queued]]);
  }

  function showBuild(body) {
    const bar = document.getElementById("build-bar");
    if (bar) bar.value = body.checked;
    setText([["build-checked", body.checked], ["build-total", body.total],
      ["build-status", body.status]]);
  }

  document.addEventListener("DOMContentLoaded", () => {
    const status = document.getElementById("submission-status");
    if (status && status.dataset.statusUrl && status.dataset.status !== "done") {
      const note = document.getElementById("waiting-note");
      if (note) note.textContent = "Grading… the verdict appears here by itself.";
      watchSubmission(status);
    }
    followScore(false);
    const batch = document.getElementById("batch-progress");
    if (batch && batch.dataset.progressUrl) watchProgress(batch, showBatch);
    const build = document.getElementById("build-progress");
    if (build && build.dataset.progressUrl) watchProgress(build, showBuild);
  });
})();
