/**
 * The account pages' script (served at `<base>/accounts.js`, next to the @simplewebauthn/browser
 * bundle at `<base>/webauthn.js`): it runs the passkey ceremonies for the elements that carry
 * `data-ceremony` (Pages.ts, ApprovalPage.ts). Each ceremony is three steps: POST `<base>/api/<ceremony>/options`
 * (the WebAuthn options and a `ceremony` id), the browser's `startRegistration` /
 * `startAuthentication`, then POST `<base>/api/<ceremony>/verify` with `{ceremony, response}`;
 * the answer names the page to go to next (`redirect`). Every POST sends the page's CSRF token in
 * `x-csrf-token`. A failure shows the API's message (or the browser's, e.g. a cancelled prompt)
 * in the page's `#error` line. Plain ES2017, no build step.
 */
export const PAGE_SCRIPT = `"use strict";
(function () {
  var meta = function (name) { var m = document.querySelector('meta[name="' + name + '"]'); return m ? m.content : ""; };
  var base = meta("accounts-base");
  var csrf = meta("csrf-token");
  var showError = function (message) {
    var line = document.getElementById("error");
    if (!line) { alert(message); return; }
    // The service writes instants as ISO strings; a person reads them in their own time zone.
    line.textContent = String(message).replace(/\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d(\\.\\d+)?Z/g, function (iso) {
      return new Date(iso).toLocaleString([], { dateStyle: "medium", timeStyle: "short" });
    });
    line.hidden = false;
  };
  var post = function (path, body) {
    return fetch(base + "/api/" + path, {
      method: "POST",
      credentials: "same-origin",
      headers: { "content-type": "application/json", "x-csrf-token": csrf },
      body: JSON.stringify(body || {})
    }).then(function (response) {
      return response.json().catch(function () { return {}; }).then(function (json) {
        if (!response.ok) {
          var message = json && json.error && json.error.message ? json.error.message : "Something went wrong (" + response.status + "). Try again.";
          throw new Error(message);
        }
        return json;
      });
    });
  };
  var browserMessage = function (error) {
    if (error && error.name === "NotAllowedError") return "The passkey prompt was closed or timed out. Try again.";
    if (error && error.name === "InvalidStateError") return "This device already holds a passkey for this account.";
    return (error && error.message) || String(error);
  };
  var run = function (ceremony, body, button) {
    var W = window.SimpleWebAuthnBrowser;
    if (!W || !W.browserSupportsWebAuthn()) { showError("This browser does not support passkeys."); return; }
    var line = document.getElementById("error");
    if (line) line.hidden = true;
    if (button) button.disabled = true;
    var authenticate = ceremony === "sign-in" || ceremony === "approve";
    post(ceremony + "/options", body).then(function (begun) {
      // A recovery link is consumed when the ceremony begins; its fresh replacement, usable at
      // once, becomes this page's address and the button's token, so a failed try can be retried.
      if (begun.link) {
        var fresh = new URL(begun.link, window.location.href);
        history.replaceState(null, "", fresh.pathname + fresh.search);
        if (button) button.setAttribute("data-token", fresh.searchParams.get("token") || "");
      }
      var start = authenticate ? W.startAuthentication : W.startRegistration;
      return start({ optionsJSON: begun.options }).then(function (response) {
        return post(ceremony + "/verify", Object.assign({}, body, { ceremony: begun.ceremony, response: response }));
      }, function (error) { throw new Error(browserMessage(error)); });
    }).then(function (done) {
      window.location.assign(done.redirect);
    }, function (error) {
      showError(error.message);
      if (button) button.disabled = false;
    });
  };
  var signUp = document.getElementById("sign-up-form");
  if (signUp) signUp.addEventListener("submit", function (event) {
    event.preventDefault();
    run("sign-up", { email: document.getElementById("email").value }, document.getElementById("sign-up"));
  });
  document.querySelectorAll("button[data-ceremony]").forEach(function (button) {
    button.addEventListener("click", function () {
      var ceremony = button.getAttribute("data-ceremony");
      var body = {};
      if (ceremony === "recover" || ceremony === "claim") body.token = button.getAttribute("data-token");
      if (ceremony === "approve") body.approval = button.getAttribute("data-approval");
      if (ceremony === "add-passkey" || ceremony === "claim") body.name = navigator.platform ? "Passkey on " + navigator.platform : "Passkey";
      run(ceremony, body, button);
    });
  });
})();
`
