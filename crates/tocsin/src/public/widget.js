/* Tocsin status widget: shows a status page's overall status (and, with
   data-components="true", each component) inside any web page.
   <script src="https://<tocsin>/embed/widget.js" data-key="pk_..." async></script>
   Optional: data-target="#css-selector" to render into an element instead of after the
   script. No dependencies; text only (never innerHTML), so nothing from the page's data
   can run. Refreshes every 60 seconds. */
(function () {
  "use strict";
  var script = document.currentScript;
  if (!script) return;
  var key = script.getAttribute("data-key");
  if (!key) return;
  var origin = new URL(script.src, document.baseURI).origin;
  var withComponents = script.getAttribute("data-components") === "true";
  var colours = {
    OPERATIONAL: "#1a7f37", MAINTENANCE: "#0969da", DEGRADED: "#9a6700",
    PARTIAL_OUTAGE: "#bc4c00", MAJOR_OUTAGE: "#cf222e"
  };
  var words = {
    OPERATIONAL: "All systems operational", MAINTENANCE: "Maintenance in progress",
    DEGRADED: "Degraded performance", PARTIAL_OUTAGE: "Partial outage",
    MAJOR_OUTAGE: "Major outage"
  };
  var box = document.createElement("div");
  box.className = "tocsin-status";
  box.setAttribute("role", "status");
  box.style.cssText = "font:14px/1.4 system-ui,sans-serif;display:inline-block";
  var target = script.getAttribute("data-target");
  var host = target ? document.querySelector(target) : null;
  if (host) host.appendChild(box); else script.parentNode.insertBefore(box, script.nextSibling);

  function dot(status) {
    var d = document.createElement("span");
    d.setAttribute("aria-hidden", "true");
    d.style.cssText = "display:inline-block;width:.6em;height:.6em;border-radius:50%;margin-right:.4em;background:" + (colours[status] || "#888");
    return d;
  }

  function render(summary) {
    while (box.firstChild) box.removeChild(box.firstChild);
    var link = document.createElement("a");
    link.href = summary.page.url;
    link.rel = "noopener";
    link.style.cssText = "color:inherit;text-decoration:none";
    link.appendChild(dot(summary.status));
    link.appendChild(document.createTextNode(words[summary.status] || summary.status));
    box.appendChild(link);
    if (withComponents) {
      var list = document.createElement("ul");
      list.style.cssText = "list-style:none;margin:.4em 0 0;padding:0";
      summary.components.forEach(function (c) {
        var item = document.createElement("li");
        item.appendChild(dot(c.status));
        item.appendChild(document.createTextNode(c.name));
        list.appendChild(item);
      });
      box.appendChild(list);
    }
  }

  function load() {
    fetch(origin + "/api/v1/embed/status", { headers: { Authorization: "Bearer " + key } })
      .then(function (r) { if (!r.ok) throw new Error("status " + r.status); return r.json(); })
      .then(render)
      .catch(function () { box.textContent = "Status unavailable"; });
  }
  load();
  setInterval(load, 60000);
})();
