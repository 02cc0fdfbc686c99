// tracework's theme, inline in the head of every report and site page (by the page's
// nonce), so that it runs before the page is drawn and a dark reader never sees a
// light flash.  The page follows the reader's system (prefers-color-scheme) unless
// the reader chose otherwise with the page's toggle; the choice is kept in
// localStorage under "tracework-theme", where every page opened from the same place
// reads it (pages opened from disk share one store), and is forgotten again when it
// matches the system's.  Nothing is fetched.
//
// The theme shown is <html data-theme="light|dark">; the stylesheets carry the same
// palette under prefers-color-scheme too, so a reader without scripts still gets the
// system's theme (and no toggle, which could not work).  A change of theme is
// announced as the event "tracework:theme" on the document (the diagrams redraw).
(function () {
  "use strict";
  var KEY = "tracework-theme";
  var root = document.documentElement;
  var query = window.matchMedia ? window.matchMedia("(prefers-color-scheme: dark)") : null;

  function system() {
    return query && query.matches ? "dark" : "light";
  }
  function chosen() {
    try {
      var value = window.localStorage.getItem(KEY);
      return value === "dark" || value === "light" ? value : null;
    } catch (err) { // storage refused (a private window, a policy): the system's theme
      return null;
    }
  }
  function choose(theme) {
    try {
      if (theme === system()) {
        window.localStorage.removeItem(KEY);
      } else {
        window.localStorage.setItem(KEY, theme);
      }
    } catch (err) {
      root.dataset.themeChoice = theme; // this page keeps it, at least
    }
  }
  function current() {
    return root.dataset.themeChoice || chosen() || system();
  }

  var button = null;
  function label() {
    if (!button) {
      return;
    }
    var dark = root.dataset.theme === "dark";
    button.setAttribute("aria-pressed", dark ? "true" : "false");
    button.title = dark ? "Dark theme on: switch to the light theme" :
      "Dark theme off: switch to the dark theme";
  }
  function apply() {
    var theme = current();
    var changed = root.dataset.theme !== theme;
    root.dataset.theme = theme;
    label();
    if (changed) {
      document.dispatchEvent(new CustomEvent("tracework:theme", { detail: { theme: theme } }));
    }
  }

  apply();
  if (query && query.addEventListener) {
    query.addEventListener("change", apply);
  }
  window.addEventListener("storage", function (event) {
    if (event.key === KEY || event.key === null) {
      apply();
    }
  });

  // The toggle: a button in the page's header (a report's top corner, the end of the
  // site's navigation), pressed while the dark theme is on.
  function addToggle() {
    var place = document.querySelector(".tw-header, header.site nav");
    if (!place || place.querySelector(".tw-theme")) {
      return;
    }
    button = document.createElement("button");
    button.type = "button";
    button.className = "tw-theme";
    var mark = document.createElement("span");
    mark.className = "tw-theme-mark";
    mark.setAttribute("aria-hidden", "true");
    button.append(mark, document.createTextNode("Dark theme"));
    button.addEventListener("click", function () {
      var next = root.dataset.theme === "dark" ? "light" : "dark";
      delete root.dataset.themeChoice;
      choose(next);
      apply();
    });
    label();
    if (place.matches("nav")) {
      place.appendChild(button);
    } else {
      place.insertBefore(button, place.firstChild);
    }
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", addToggle);
  } else {
    addToggle();
  }
})();
