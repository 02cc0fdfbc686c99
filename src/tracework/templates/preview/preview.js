// tracework preview: reload this page when the preview has a newer run to show.
//
// Served only by `tracework preview`, never part of a report.  The page's policy lets
// this script connect to one URL, the preview's event stream on the same address; each
// message there is the number of the run the preview shows ("3"), followed by
// " rendering" while a new run is under way.  A number other than this page's own
// means a newer page (or an error over the last good one): reload.  Nothing else is
// requested, and a stopped preview only leaves the page as it was.
(function () {
  "use strict";

  const own = document.currentScript.dataset.generation;
  const busy = document.createElement("p");
  busy.className = "tw-preview-busy";
  busy.setAttribute("role", "status");
  busy.textContent = "Rendering…";
  busy.hidden = true;

  function start() {
    document.body.appendChild(busy);
    const events = new EventSource("/_tracework/events");
    events.addEventListener("message", function (event) {
      const [generation, state] = String(event.data).split(" ");
      if (generation !== own) {
        events.close();
        window.location.reload();
        return;
      }
      busy.hidden = state !== "rendering";
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
