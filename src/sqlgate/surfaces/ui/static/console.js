// sqlgate ui: the console's only script. It reads nothing from the page but data-copy
// attributes (escaped by the server) and never builds HTML.
"use strict";
document.addEventListener("click", function (event) {
  var button = event.target.closest ? event.target.closest(".copy-button") : null;
  if (!button) { return; }
  var text = button.getAttribute("data-copy") || "";
  if (navigator.clipboard && navigator.clipboard.writeText) {
    navigator.clipboard.writeText(text).then(function () {
      button.textContent = "copied";
    }, function () { button.textContent = "select and copy"; });
  }
});
document.addEventListener("change", function (event) {
  var target = event.target;
  if (target && target.tagName === "SELECT" && target.form) { target.form.submit(); }
});
