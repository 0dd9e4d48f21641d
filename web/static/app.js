// Rollout UI behaviour. Loaded from /static (the CSP allows no inline script): copy buttons,
// LaTeX via KaTeX (MathML output, so no inline styles are needed), and re-running both after HTMX swaps.
(function () {
  "use strict";

  function copyText(text, button) {
    var done = function () {
      var label = button.textContent;
      button.textContent = "Copied";
      button.classList.add("copied");
      setTimeout(function () { button.textContent = label; button.classList.remove("copied"); }, 1500);
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, function () { fallback(text); done(); });
    } else {
      fallback(text);
      done();
    }
  }

  function fallback(text) {
    var area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.className = "offscreen";
    document.body.appendChild(area);
    area.select();
    try { document.execCommand("copy"); } catch (e) { /* nothing else to try */ }
    document.body.removeChild(area);
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest("button.copy");
    if (!button) { return; }
    var text = null;
    if (button.dataset.copyUrl) {
      text = new URL(button.dataset.copyUrl, window.location.origin).href;
    } else if (button.dataset.copyFrom) {
      var source = document.getElementById(button.dataset.copyFrom);
      text = source ? source.textContent : null;
    }
    if (text) {
      button.dataset.copied = text;
      copyText(text, button);
    }
  });

  function renderMath(root) {
    if (!window.katex) { return; }
    var nodes = root.querySelectorAll("span.math-inline:not([data-done]), span.math-display:not([data-done])");
    for (var i = 0; i < nodes.length; i++) {
      var node = nodes[i];
      var tex = node.textContent;
      node.setAttribute("data-done", "1");
      node.setAttribute("title", tex);
      try {
        window.katex.render(tex, node, {
          displayMode: node.classList.contains("math-display"), output: "mathml", throwOnError: false,
          trust: false, maxExpand: 1000, maxSize: 20
        });
      } catch (e) {
        node.textContent = tex;
      }
    }
  }

  function latexEnabled() {
    return !/[?&]latex=0(&|$)/.test(window.location.search);
  }

  document.addEventListener("DOMContentLoaded", function () {
    if (latexEnabled()) { renderMath(document); }
  });
  // Filter forms: leave empty fields out of the URL, so pasted links stay short and readable.
  document.addEventListener("htmx:configRequest", function (event) {
    var source = event.detail.elt;
    if (event.detail.verb !== "get" || !source || !source.classList || !source.classList.contains("filters")) { return; }
    var params = event.detail.parameters;
    Object.keys(params).forEach(function (key) {
      if (params[key] === "") { delete params[key]; }
    });
  });
  document.querySelectorAll && document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!form.classList || !form.classList.contains("filters") || (form.method || "").toLowerCase() !== "get") { return; }
    if (form.hasAttribute("hx-get")) { return; }
    Array.prototype.forEach.call(form.elements, function (field) {
      if (field.name && field.value === "" && !field.disabled) { field.disabled = true; }
    });
  });

  document.addEventListener("htmx:afterSwap", function (event) {
    if (latexEnabled()) { renderMath(event.target.parentNode || document); }
  });
})();
