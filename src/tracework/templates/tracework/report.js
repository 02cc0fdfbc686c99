// tracework report: render the page's Mermaid diagrams with the pinned local copy of
// Mermaid (strict security level, configuration locked against diagrams), then link
// every node bound to a record to the record's anchor.  Nothing is fetched: this file
// and mermaid.min.js sit beside the page.
//
// A diagram is drawn at its natural size, its text as large as the page's body text,
// and scrolls inside its figure when wider than the column (shrinking it to fit made
// labels a few pixels high).  When it is wider, the figure says so: a line above it
// ("scroll sideways") and a shade at each edge that has more to see, and offers a
// "Fit to width" view (the whole drawing at once, its labels smaller; pressed again,
// the natural size).  A button, or a click on the drawing, opens it in a modal
// <dialog> filling the screen: the rest of the page is inert while it is open (the
// browser keeps focus inside), Escape or the close button shut it, and focus returns
// to the button.  A phone's own pinch-zoom still works.
//
// Diagrams follow the page's theme (the theme script, inline in the head, sets
// <html data-theme> and announces a change): Mermaid's "neutral" theme on light paper,
// its "dark" theme on dark, and every diagram is drawn again when the theme changes.
// On dark paper the colours tracework's generated diagrams use are exchanged for their
// dark counterparts, and a styled node given a fill but no text colour gets the text
// colour that reads on that fill, in either theme.  Display only: the diagram's source,
// as hashed and as shown in its fold, is the analyst's.
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
        measure(viewer.view.closest("figure.tw-diagram"));
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

  // The drawing's own width, whatever the view shows it at.
  function naturalWidth(svg) {
    const width = parseFloat(svg.getAttribute("width"));
    return width > 0 ? width : (svg.viewBox && svg.viewBox.baseVal.width) || 0;
  }

  // Whether the drawing is wider than its view, and which edges have more to see.
  function measure(figure) {
    const view = figure && figure.querySelector(".tw-diagram-view");
    const svg = view && view.querySelector("svg");
    if (!svg) {
      return;
    }
    const wide = naturalWidth(svg) > view.clientWidth + 1;
    figure.classList.toggle("tw-wide", wide);
    const fit = figure.querySelector(".tw-diagram-fit");
    if (fit) {
      fit.hidden = !wide;
    }
    const fitted = view.classList.contains("tw-fit");
    const hint = figure.querySelector(".tw-diagram-hint");
    if (hint) {
      hint.hidden = !wide;
      hint.textContent = fitted ?
        "Fitted to the width: its labels are smaller than the text." :
        "Wider than the page: scroll sideways, or fit it to the width.";
    }
    const frame = figure.querySelector(".tw-diagram-frame");
    const scrolls = view.scrollWidth > view.clientWidth + 1;
    frame.classList.toggle("tw-more-left", scrolls && view.scrollLeft > 1);
    frame.classList.toggle("tw-more-right",
      scrolls && view.scrollLeft + view.clientWidth < view.scrollWidth - 1);
  }

  function addViewer(figure, svg) {
    // The drawing leaves the <pre> (its white-space and font are for the source text)
    // for a scrolling view a keyboard can reach and scroll, in a frame that shades the
    // edges with more to see.
    const view = document.createElement("div");
    view.className = "tw-diagram-view";
    view.tabIndex = 0;
    view.setAttribute("role", "region");
    view.setAttribute("aria-label", (figure.getAttribute("aria-label") || "Diagram") +
      " (scrolls when wider than the page)");
    view.appendChild(svg);
    const frame = document.createElement("div");
    frame.className = "tw-diagram-frame";
    frame.appendChild(view);
    figure.querySelector("pre.mermaid").replaceWith(frame);

    const tools = document.createElement("div");
    tools.className = "tw-diagram-tools";
    const hint = document.createElement("p");
    hint.className = "tw-diagram-hint";
    hint.hidden = true;
    const fit = document.createElement("button");
    fit.type = "button";
    fit.className = "tw-diagram-fit";
    fit.textContent = "Fit to width";
    fit.hidden = true;
    fit.setAttribute("aria-pressed", "false");
    fit.addEventListener("click", function () {
      const fitted = view.classList.toggle("tw-fit");
      fit.setAttribute("aria-pressed", fitted ? "true" : "false");
      measure(figure);
    });
    const open = document.createElement("button");
    open.type = "button";
    open.className = "tw-diagram-open";
    open.textContent = "Full screen";
    open.setAttribute("aria-haspopup", "dialog");
    open.addEventListener("click", function () { openViewer(figure, open); });
    tools.append(hint, fit, open);
    figure.insertBefore(tools, frame);

    view.addEventListener("click", function (event) {
      if (!(event.target.closest && event.target.closest("a"))) {
        openViewer(figure, open);
      }
    });
    view.addEventListener("scroll", function () { measure(figure); }, { passive: true });
    if (typeof ResizeObserver !== "undefined") {
      new ResizeObserver(function () { measure(figure); }).observe(view);
    }
    measure(figure);
  }

  function showError(figure, message) {
    const note = document.createElement("p");
    note.className = "tw-diagram-error";
    note.textContent = "This diagram could not be drawn: " + message;
    figure.appendChild(note);
  }

  function linkBoundNodes(figure, svg) {
    let bindings = {};
    try {
      bindings = JSON.parse(figure.dataset.bindings || "{}");
    } catch (err) {
      return;
    }
    svg.querySelectorAll("g.node").forEach(function (node) {
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

  // tracework's diagram colours (notebook/diagrams.py) and what stands for each on
  // dark paper: the fills darkened, the strokes and route colours lightened.
  const DARK_COLOURS = {
    "#eef2fb": "#1c2740", "#fdf6e9": "#352a15", "#f3f3f3": "#2a2d33", "#ffffff": "#1d2026",
    "#2451a6": "#8fb4ff", "#1c7a45": "#62c98f", "#9a5b00": "#e6a952", "#5b6270": "#a6adb8",
    "#7b3fa0": "#c99af0", "#b3261e": "#ff8d84", "#00796b": "#4fd1bf"
  };
  // Mermaid's dark theme drawn in the page's dark palette (report.css): nodes a shade
  // above the paper, groups a shade below, lines and borders light enough to see.
  const DARK_VARIABLES = {
    darkMode: true, background: "#15171b", mainBkg: "#23272e", nodeBorder: "#8b93a1",
    clusterBkg: "#1b1e23", clusterBorder: "#4a505a", lineColor: "#b8bfca",
    edgeLabelBackground: "#2a2e35", primaryTextColor: "#e3e5e8", nodeTextColor: "#e3e5e8",
    titleColor: "#e3e5e8", textColor: "#e3e5e8"
  };
  const STYLING = /^(\s*(?:classDef|style|linkStyle)\s+\S+\s+)(.*)$/;

  // A colour's relative luminance (WCAG), for #rgb and #rrggbb; null otherwise.
  function luminance(colour) {
    let hex = /^#([0-9a-f]{3}|[0-9a-f]{6})$/i.exec(colour);
    if (!hex) {
      return null;
    }
    hex = hex[1].length === 3 ? hex[1].replace(/./g, "$&$&") : hex[1];
    const channel = function (i) {
      const c = parseInt(hex.slice(i, i + 2), 16) / 255;
      return c <= 0.03928 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4);
    };
    return 0.2126 * channel(0) + 0.7152 * channel(2) + 0.0722 * channel(4);
  }

  // The diagram as drawn in ``theme``: only its styling lines' colours change.
  function themed(text, theme) {
    return text.split("\n").map(function (line) {
      const styling = STYLING.exec(line);
      if (!styling) {
        return line;
      }
      let props = styling[2];
      if (theme === "dark") {
        props = props.replace(/#[0-9a-f]{6}\b/gi, function (c) {
          return DARK_COLOURS[c.toLowerCase()] || c;
        });
      }
      const fill = /(?:^|[,;])\s*fill\s*:\s*(#[0-9a-f]{3,6})\b/i.exec(props);
      if (fill && !/(?:^|[,;])\s*color\s*:/i.test(props)) {
        const light = luminance(fill[1]);
        if (light !== null) {
          props += "," + "color:" + (light > 0.18 ? "#1d1f23" : "#e3e5e8");
        }
      }
      return styling[1] + props;
    }).join("\n");
  }

  function theme() {
    return document.documentElement.dataset.theme === "dark" ? "dark" : "light";
  }

  // A diagram may not change the configuration: every top-level key is made "secure",
  // so Mermaid drops what a %%{init}%% directive or front matter would set (themeCSS
  // with url(...) made the browser fetch).  tracework's check refuses both as well.
  function configure(shown) {
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
    const variables = { fontSize: bodySize + "px" };
    if (shown === "dark") { // Mermaid's dark theme, on the page's own dark paper
      Object.assign(variables, DARK_VARIABLES);
    }
    mermaid.initialize({
      startOnLoad: false,
      securityLevel: "strict",
      suppressErrorRendering: true,
      theme: shown === "dark" ? "dark" : "neutral",
      fontSize: bodySize,
      themeVariables: variables,
      flowchart: { useMaxWidth: false },
      secure: locked
    });
  }

  let drawn = 0; // a new id for every drawing: an old one may still be on the page
  const figures = [];

  async function draw(figure, shown) {
    const { svg: markup } = await mermaid.render("tw-mermaid-" + (++drawn),
      themed(figure.twSource, shown));
    const holder = document.createElement("div");
    holder.innerHTML = markup;
    const svg = holder.querySelector("svg");
    linkBoundNodes(figure, svg);
    if (figure.twSvg) {
      figure.twSvg.replaceWith(svg); // in its figure or in the full-screen dialog
      measure(figure);
    } else {
      addViewer(figure, svg);
    }
    figure.twSvg = svg;
    figure.dataset.theme = shown;
  }

  let queue = Promise.resolve();

  function drawAll() {
    queue = queue.then(async function () {
      const shown = theme();
      configure(shown);
      let failed = 0;
      for (const figure of figures) {
        if (figure.twFailed || figure.dataset.theme === shown) {
          continue;
        }
        try {
          await draw(figure, shown);
        } catch (err) {
          failed += 1;
          figure.twFailed = true;
          showError(figure, String((err && err.message) || err));
        }
      }
      const root = document.documentElement;
      if (failed || root.dataset.diagrams !== "failed") {
        root.dataset.diagrams = failed ? "failed" : "done";
      }
      root.dataset.diagramsTheme = shown;
    });
    return queue;
  }

  function render() {
    figures.push(...document.querySelectorAll("figure.tw-diagram"));
    if (!figures.length) {
      return;
    }
    if (typeof mermaid === "undefined") {
      figures.forEach(function (f) { showError(f, "the Mermaid library is missing."); });
      document.documentElement.dataset.diagrams = "failed";
      return;
    }
    // the text as written in the page (escaped there, so read back as text)
    figures.forEach(function (figure) {
      figure.twSource = figure.querySelector("pre.mermaid").textContent;
    });
    drawAll();
    document.addEventListener("tracework:theme", drawAll);
  }

  document.addEventListener("DOMContentLoaded", render);
})();
