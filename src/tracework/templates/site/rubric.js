// The rubric page's choice of render per system.  Every render of a system that marked
// this rubric is a row of the page (the newest shown, the others hidden); this script
// shows each row's select and, on a change, the row of the chosen render.  Without it
// the page compares systems at their newest renders, as its counts do.
(function () {
  "use strict";
  var selects = document.querySelectorAll("select.render-choice");
  Array.prototype.forEach.call(selects, function (select) {
    select.parentNode.hidden = false;
    select.addEventListener("change", function () {
      var body = select.closest("tbody");
      Array.prototype.forEach.call(body.querySelectorAll("tr[data-commit]"), function (row) {
        var shown = row.getAttribute("data-commit") === select.value;
        row.hidden = !shown;
        var other = row.querySelector("select.render-choice");
        if (shown && other !== select) {
          other.value = select.value;
          other.focus();
        }
      });
    });
  });
})();
