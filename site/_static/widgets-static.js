/* Saved ipywidgets views, drawn from the widget state stored in the executed notebook.
 *
 * myst-nb puts the notebook's widget state in <script type="application/vnd.jupyter.widget-state+json">
 * and each displayed widget as <script type="application/vnd.jupyter.widget-view+json">{"model_id": ...}.
 * This file draws those views from the saved state alone: the course's widgets are built from the
 * standard controls (boxes, HTML, sliders, text boxes, dropdowns, check boxes, toggle buttons,
 * accordions), and their pictures are HTML/SVG values, so the drawing needs no kernel and no code
 * from outside the site.  Controls are shown disabled, at the values they had when the notebook ran:
 * without a Python kernel nothing would recompute.  A widget type not listed below is named, not drawn.
 */
(function () {
  "use strict";
  const STATE = "application/vnd.jupyter.widget-state+json";
  const VIEW = "application/vnd.jupyter.widget-view+json";
  const PREFIX = "IPY_MODEL_";

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  function loadState() {
    const models = {};
    document.querySelectorAll('script[type="' + STATE + '"]').forEach(function (s) {
      const state = JSON.parse(s.textContent).state || {};
      Object.keys(state).forEach(function (id) { models[id] = state[id]; });
    });
    return models;
  }

  function modelId(ref) {
    return typeof ref === "string" && ref.indexOf(PREFIX) === 0 ? ref.slice(PREFIX.length) : ref;
  }

  function applyLayout(node, models, ref) {
    const layout = models[modelId(ref)];
    if (!layout || !layout.state) return;
    const map = { width: "width", height: "height", min_height: "minHeight", max_width: "maxWidth",
                  min_width: "minWidth", margin: "margin", padding: "padding", display: "display" };
    Object.keys(map).forEach(function (k) {
      const v = layout.state[k];
      if (v !== null && v !== undefined && v !== "") node.style[map[k]] = v;
    });
  }

  function described(s, control) {
    const wrap = el("div", "sw-control");
    if (s.description) {
      const label = el("label", "sw-label");
      if (s.description_allow_html) label.innerHTML = s.description; else label.textContent = s.description;
      wrap.appendChild(label);
    }
    wrap.appendChild(control);
    return wrap;
  }

  function renderOutputs(outputs) {
    const box = el("div", "sw-output");
    (outputs || []).forEach(function (o) {
      const data = o.data || {};
      if (o.output_type === "stream") box.appendChild(el("pre", "sw-stream", o.text));
      else if (o.output_type === "error") box.appendChild(el("pre", "sw-error", (o.ename || "") + ": " + (o.evalue || "")));
      else if (data["text/html"]) { const d = el("div"); d.innerHTML = [].concat(data["text/html"]).join(""); box.appendChild(d); }
      else if (data["image/png"]) { const i = el("img"); i.src = "data:image/png;base64," + data["image/png"]; i.alt = "saved output"; box.appendChild(i); }
      else if (data["image/svg+xml"]) { const d = el("div"); d.innerHTML = [].concat(data["image/svg+xml"]).join(""); box.appendChild(d); }
      else if (data["text/plain"]) box.appendChild(el("pre", "sw-stream", [].concat(data["text/plain"]).join("")));
    });
    return box;
  }

  function render(ref, models, depth) {
    const id = modelId(ref);
    const model = models[id];
    if (!model || depth > 40) return el("span", "sw-missing", "(widget " + id + ": no saved state)");
    const s = model.state || {};
    const name = (model.model_name || "").replace(/Model$/, "");
    let node;
    switch (name) {
      case "VBox": case "HBox": case "Box": case "GridBox":
        node = el("div", "sw-box sw-" + name.toLowerCase());
        (s.children || []).forEach(function (c) { node.appendChild(render(c, models, depth + 1)); });
        break;
      case "Accordion": case "Tab": case "Stack":
        node = el("div", "sw-accordion");
        (s.children || []).forEach(function (c, i) {
          const d = el("details");
          if (s.selected_index === i) d.open = true;
          d.appendChild(el("summary", null, (s.titles && s.titles[i]) || ("part " + (i + 1))));
          d.appendChild(render(c, models, depth + 1));
          node.appendChild(d);
        });
        break;
      case "HTML": case "HTMLMath": {
        const body = el("div", "sw-html");
        body.innerHTML = s.value || "";
        node = s.description ? described(s, body) : body;
        break;
      }
      case "Label":
        node = el("span", "sw-label-widget", s.value);
        break;
      case "IntSlider": case "FloatSlider": case "FloatLogSlider": {
        const input = el("input");
        input.type = "range"; input.min = s.min; input.max = s.max; input.step = s.step || 1;
        input.value = s.value; input.disabled = true;
        const box = el("span", "sw-slider");
        box.appendChild(input);
        box.appendChild(el("span", "sw-readout", s.value));
        node = described(s, box);
        break;
      }
      case "IntRangeSlider": case "FloatRangeSlider":
        node = described(s, el("span", "sw-readout", (s.value || []).join(" – ")));
        break;
      case "IntText": case "BoundedIntText": case "FloatText": case "BoundedFloatText": case "Text":
      case "Password": case "Combobox": {
        const input = el("input");
        input.type = "text"; input.value = name === "Password" ? "••••" : (s.value === null ? "" : s.value);
        input.disabled = true;
        node = described(s, input);
        break;
      }
      case "Textarea": {
        const t = el("textarea", null, s.value);
        t.disabled = true;
        node = described(s, t);
        break;
      }
      case "Dropdown": case "Select": case "RadioButtons": case "SelectionSlider": {
        const select = el("select");
        (s._options_labels || []).forEach(function (label, i) {
          const o = el("option", null, label);
          if (i === s.index) o.selected = true;
          select.appendChild(o);
        });
        select.disabled = true;
        node = described(s, select);
        break;
      }
      case "Checkbox": case "ToggleButton": {
        const input = el("input");
        input.type = "checkbox"; input.checked = !!s.value; input.disabled = true;
        const label = el("label", "sw-check");
        label.appendChild(input);
        label.appendChild(document.createTextNode(" " + (s.description || "")));
        node = el("div", "sw-control");
        node.appendChild(label);
        break;
      }
      case "ToggleButtons": {
        const group = el("span", "sw-toggles");
        (s._options_labels || []).forEach(function (label, i) {
          const b = el("button", i === s.index ? "sw-selected" : null, label);
          b.disabled = true; b.type = "button";
          group.appendChild(b);
        });
        node = described(s, group);
        break;
      }
      case "Button": {
        const b = el("button", null, s.description);
        b.disabled = true; b.type = "button";
        node = b;
        break;
      }
      case "IntProgress": case "FloatProgress": {
        const p = el("progress");
        p.max = s.max; p.value = s.value;
        node = described(s, p);
        break;
      }
      case "Output":
        node = renderOutputs(s.outputs);
        break;
      default:
        node = el("span", "sw-missing", "(" + (model.model_name || "widget") + ": not drawn in the saved view)");
    }
    (s._dom_classes || []).forEach(function (c) { node.classList.add(c); });
    applyLayout(node, models, s.layout);
    return node;
  }

  function notebookOfPage() {
    const page = decodeURIComponent(location.pathname.split("/").pop() || "");
    return /^\d\d_[\w]+\.html$/.test(page) ? "notebooks/" + page.replace(/\.html$/, ".ipynb") : "the chapter's notebook";
  }

  function draw() {
    const views = document.querySelectorAll('script[type="' + VIEW + '"]');
    if (!views.length) return;
    const models = loadState();
    views.forEach(function (script) {
      const view = JSON.parse(script.textContent);
      const frame = el("div", "static-widget");
      const note = el("div", "static-widget-note");
      note.innerHTML = "<strong>Saved view.</strong> This widget shows its state when the notebook ran; its " +
        "controls do not respond here, because no Python kernel is behind this page. To use it live, run " +
        "<code>make lab</code> and open <code>" + notebookOfPage() + "</code> " +
        '(see <a href="index.html#run-it-yourself">run it yourself</a>).';
      frame.appendChild(note);
      frame.appendChild(render(view.model_id, models, 0));
      script.parentNode.insertBefore(frame, script);
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", draw);
  else draw();
})();
