// tracework report: render the page's Mermaid diagrams with the pinned local copy of
// Mermaid (strict security level, configuration locked against diagrams), then link
// every node bound to a record to the record's anchor.  Nothing is fetched: this file
// and mermaid.min.js sit beside the page.
(function () {
  "use strict";

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
    mermaid.initialize({
      startOnLoad: false,
      securityLevel: "strict",
      theme: "neutral",
      secure: locked
    });
    let failed = 0;
    for (const figure of figures) {
      const pre = figure.querySelector("pre.mermaid");
      try {
        await mermaid.run({ nodes: [pre] });
        linkBoundNodes(figure);
      } catch (err) {
        failed += 1;
        showError(figure, String((err && err.message) || err));
      }
    }
    document.documentElement.dataset.diagrams = failed ? "failed" : "done";
  }

  document.addEventListener("DOMContentLoaded", render);
})();
