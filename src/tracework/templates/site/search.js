// Client-side search over the site's records, quotes and reports.  The index is
// assets/search-index.js (also published as search.json); results are built with
// textContent only, so no indexed text is ever parsed as HTML.
(function () {
  "use strict";
  var input = document.getElementById("search");
  var list = document.getElementById("search-results");
  var status = document.getElementById("search-status");
  var form = document.getElementById("search-form");
  var entries = window.TRACEWORK_SEARCH || [];
  if (!input || !list || !status) return;
  var haystacks = entries.map(function (e) {
    return [e.id, e.label, e.report, e.kind].concat(e.paths).join("\n").toLowerCase();
  });
  var LIMIT = 50;

  function run() {
    var terms = input.value.toLowerCase().split(/\s+/).filter(Boolean);
    list.textContent = "";
    if (!terms.length) {
      status.textContent = "Type to search.";
      return;
    }
    var found = 0;
    for (var i = 0; i < entries.length; i++) {
      var text = haystacks[i];
      if (!terms.every(function (t) { return text.indexOf(t) !== -1; })) continue;
      found++;
      if (found > LIMIT) continue;
      var e = entries[i];
      var item = document.createElement("li");
      var link = document.createElement("a");
      link.href = e.href;
      link.textContent = e.id;
      item.appendChild(link);
      item.appendChild(document.createTextNode(
        " — " + e.label + " (" + e.kind + ", " + e.report + ")"
      ));
      list.appendChild(item);
    }
    status.textContent = found === 0 ? "No match." :
      found + (found === 1 ? " match" : " matches") + (found > LIMIT ? ", first " + LIMIT + " shown." : ".");
  }

  input.addEventListener("input", run);
  if (form) form.addEventListener("submit", function (event) { event.preventDefault(); run(); });
  var params = new URLSearchParams(window.location.search);
  if (params.get("q")) { input.value = params.get("q"); run(); }
})();
