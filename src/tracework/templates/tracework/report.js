// tracework report: render the page's Mermaid diagrams with the pinned local copy of
// Mermaid (strict security level, configuration locked against diagrams), then link
// every node bound to a record to the record's anchor.  Nothing is fetched: this file
// and mermaid.min.js sit beside the page.
//
// A diagram is drawn at its natural size, its text as large as the page's body text,
// and scrolls inside its figure when wider than the column (shrinking it to fit made
// labels a few pixels high).  A button, or a click on the drawing, opens it in a
// modal <dialog> filling the screen: the rest of the page is inert while it is open
// (the browser keeps focus inside), Escape or the close button shut it, and focus
// returns to the button.  No zoom: the drawing is already at text size, and a
// phone's own pinch-zoom still works.
(function () {
  "use strict";

  let viewer = null;

  function makeViewer() {
    const dialog = document.createElement("dialog");
    dialog.className = "tw-diagram-dialog";
    const bar = document.createElement("div");
    bar.className = "tw-diagram-dialog-bar";
    const title = document.createElement("p");
    title.className = "tw-diagram-dialog-title";
    title.id = "tw-diagram-dialog-title";
    const close = document.createElement("button");
    close.type = "button";
    close.className = "tw-diagram-close";
    close.textContent = "Close";
    close.autofocus = true;
    close.addEventListener("click", function () { dialog.close(); });
    bar.append(title, close);
    const stage = document.createElement("div");
    stage.className = "tw-diagram-stage";
    stage.tabIndex = 0;
    dialog.setAttribute("aria-labelledby", title.id);
    dialog.append(bar, stage);
    document.body.appendChild(dialog);
    viewer = { dialog: dialog, title: title, stage: stage, view: null, opener: null };
    // The drawing goes back to its figure however the dialog closes (Escape, button).
    dialog.addEventListener("close", function () {
      const svg = stage.querySelector("svg");
      if (svg && viewer.view) {
        viewer.view.appendChild(svg);
      }
      if (viewer.opener) {
        viewer.opener.focus();
      }
      viewer.view = null;
    });
    // Following a node's link to its record closes the dialog first.
    stage.addEventListener("click", function (event) {
      if (event.target.closest && event.target.closest("a")) {
        dialog.close();
      }
    });
    return viewer;
  }

  function openViewer(figure, opener) {
    const view = figure.querySelector(".tw-diagram-view");
    const svg = view && view.querySelector("svg");
    if (!svg) {
      return;
    }
    const v = viewer || makeViewer();
    const caption = figure.querySelector("figcaption");
    v.title.textContent = (caption && caption.textContent) || "Diagram";
    v.view = view;
    v.opener = opener;
    v.stage.appendChild(svg);
    v.dialog.showModal();
  }

  function addViewer(figure) {
    const pre = figure.querySelector("pre.mermaid");
    const svg = pre && pre.querySelector("svg");
    if (!svg) {
      return;
    }
    // The drawing leaves the <pre> (its white-space and font are for the source text)
    // for a scrolling view a keyboard can reach and scroll.
    const view = document.createElement("div");
    view.className = "tw-diagram-view";
    view.tabIndex = 0;
    view.setAttribute("role", "region");
    view.setAttribute("aria-label", (figure.getAttribute("aria-label") || "Diagram") +
      " (scrolls when wider than the page)");
    view.appendChild(svg);
    pre.replaceWith(view);
    const open = document.createElement("button");
    open.type = "button";
    open.className = "tw-diagram-open";
    open.textContent = "Full screen";
    open.setAttribute("aria-haspopup", "dialog");
    open.addEventListener("click", function () { openViewer(figure, open); });
    figure.insertBefore(open, view);
    view.addEventListener("click", function (event) {
      if (!(event.target.closest && event.target.closest("a"))) {
        openViewer(figure, open);
      }
    });
  }

  function showError(figure, message) {
    const note = document.createElement("p");
    note.className = "tw-diagram-error";
    note.textContent = "This diagram could not be drawn: " + message;
    figure.appendChild(note);
  }

  function linkBoundNodes(figure) {
    let bindings = {};
    try {
      bindings = JSON.parse(figure.dataset.bindings || "{}");
    } catch (err) {
      return;
    }
    figure.querySelectorAll("svg g.node").forEach(function (node) {
      const match = /-flowchart-(.+)-\d+$/.exec(node.id || "");
      const record = match && bindings[match[1]];
      if (!record || !document.getElementById(record)) {
        return;
      }
      const link = document.createElementNS("http://www.w3.org/2000/svg", "a");
      link.setAttribute("href", "#" + record);
      link.setAttribute("class", "tw-node-link");
      link.setAttribute("aria-label", record);
      node.parentNode.insertBefore(link, node);
      link.appendChild(node);
    });
  }

  async function render() {
    const figures = Array.from(document.querySelectorAll("figure.tw-diagram"));
    if (!figures.length) {
      return;
    }
    if (typeof mermaid === "undefined") {
      figures.forEach(function (f) { showError(f, "the Mermaid library is missing."); });
      document.documentElement.dataset.diagrams = "failed";
      return;
    }
    // A diagram may not change the configuration: every top-level key is made "secure",
    // so Mermaid drops what a %%{init}%% directive or front matter would set (themeCSS
    // with url(...) made the browser fetch).  tracework's check refuses both as well.
    const locked = Object.keys(mermaid.mermaidAPI.defaultConfig || {}).concat([
      "secure", "securityLevel", "startOnLoad", "maxTextSize", "suppressErrorRendering",
      "maxEdges", "theme", "themeVariables", "themeCSS", "fontFamily", "altFontFamily",
      "fontSize", "darkMode", "htmlLabels", "look", "layout", "handDrawnSeed", "wrap",
      "markdownAutoWrap", "deterministicIds", "dompurifyConfig", "flowchart", "elk",
      "arrowMarkerAbsolute", "legacyMathML", "forceLegacyMathML", "logLevel"
    ]);
    // Labels as large as the page's body text, and the drawing at its natural width
    // (useMaxWidth would shrink it into the column).
    const bodySize = parseFloat(getComputedStyle(document.body).fontSize) || 16;
    mermaid.initialize({
      startOnLoad: false,
      securityLevel: "strict",
      theme: "neutral",
      fontSize: bodySize,
      themeVariables: { fontSize: bodySize + "px" },
      flowchart: { useMaxWidth: false },
      secure: locked
    });
    let failed = 0;
    for (const figure of figures) {
      const pre = figure.querySelector("pre.mermaid");
      try {
        await mermaid.run({ nodes: [pre] });
        linkBoundNodes(figure);
        addViewer(figure);
      } catch (err) {
        failed += 1;
        showError(figure, String((err && err.message) || err));
      }
    }
    document.documentElement.dataset.diagrams = failed ? "failed" : "done";
  }

  document.addEventListener("DOMContentLoaded", render);
})();
