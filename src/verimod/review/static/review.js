// verimod review: keyboard shortcuts (see verimod.review.app). No inline script: CSP allows this file only.
(function () {
  "use strict";
  var keys = { q: ["groundedness", "pass"], a: ["groundedness", "fail"], w: ["adequacy", "pass"],
               s: ["adequacy", "fail"], e: ["coherence", "pass"], d: ["coherence", "fail"] };
  document.addEventListener("keydown", function (event) {
    var form = document.getElementById("decision");
    if (!form || event.ctrlKey || event.metaKey || event.altKey) { return; }
    var target = event.target;
    var typing = target && (target.tagName === "TEXTAREA" ||
      (target.tagName === "INPUT" && target.type === "text"));
    if (event.key === "Enter" && !(target && target.tagName === "TEXTAREA")) {
      event.preventDefault();
      form.requestSubmit();
      return;
    }
    if (typing) { return; }
    if (Object.prototype.hasOwnProperty.call(keys, event.key)) {
      var choice = keys[event.key];
      var radio = document.getElementById(choice[0] + "-" + choice[1]);
      if (radio) { radio.checked = true; event.preventDefault(); }
    } else if (event.key === "j" || event.key === "k") {
      var link = document.getElementById(event.key === "j" ? "next" : "prev");
      if (link) { window.location.href = link.getAttribute("href"); }
    }
  });
}());
