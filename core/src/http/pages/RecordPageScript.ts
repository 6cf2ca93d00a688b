/**
 * The participant page's flow, as browser script text (plain ES2017, no build step, no
 * backslashes): it reads the ingest key from the address's fragment (`#key=`), so the key never
 * reaches a server log, and walks the participant through the /ingest/* routes of its own origin
 * (docs/fieldwork.md "The participant flow"): the project, the questions and the proof of work,
 * consent, one take per prompt, progress and the takes' review, withdrawal. The participant token
 * and a random device id stay in localStorage (the token per project), so a reload continues.
 * Every refusal's message is shown in the page's alert line. Uses AUDIO_SCRIPT's helpers.
 */
export const FLOW_SCRIPT = `
  var $ = function (id) { return document.getElementById(id); };
  var key = new URLSearchParams(location.hash.slice(1)).get("key") || "";
  var state = { project: null, participant: null, token: null, promptId: null, capture: null, take: null };

  // ---- messages ---------------------------------------------------------------------------
  var say = function (id, text) { var line = $(id); line.textContent = text || ""; line.hidden = !text; };
  var showError = function (error) { say("notice", ""); say("message", (error && error.message) || String(error)); };
  var notice = function (text) { say("message", ""); say("notice", text); };
  var clearMessages = function () { say("message", ""); say("notice", ""); };
  var busy = function (button, on) { button.disabled = on; };

  // ---- the API ----------------------------------------------------------------------------
  var call = function (method, path, options) {
    options = options || {};
    var headers = { authorization: "Bearer " + key };
    Object.keys(options.headers || {}).forEach(function (name) { headers[name] = options.headers[name]; });
    if (state.token) headers["x-participant-token"] = state.token;
    var init = { method: method, headers: headers, cache: "no-store" };
    if (options.json !== undefined) { headers["content-type"] = "application/json"; init.body = JSON.stringify(options.json); }
    if (options.body !== undefined) init.body = options.body;
    return fetch(path, init).then(function (response) {
      return response.json().catch(function () { return null; }).then(function (body) {
        if (response.ok) return body;
        var problem = (body && body.error) || {};
        var error = new Error(problem.message || "The server answered " + response.status + ". Try again.");
        error.status = response.status;
        error.code = problem.code || "";
        throw error;
      });
    });
  };

  // ---- the browser's memory ---------------------------------------------------------------
  var tokenKey = function () { return "fieldwork:token:" + state.project.id; };
  var deviceId = function () {
    var id = localStorage.getItem("fieldwork:device");
    if (!id) {
      var alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
      var bytes = crypto.getRandomValues(new Uint8Array(32));
      id = "";
      for (var i = 0; i < bytes.length; i++) id += alphabet[bytes[i] % alphabet.length];
      localStorage.setItem("fieldwork:device", id);
    }
    return id;
  };
  var forget = function () { localStorage.removeItem(tokenKey()); state.token = null; state.participant = null; };

  // ---- building the page ------------------------------------------------------------------
  /** An element with attributes and children; text goes in as text, never as markup. */
  var el = function (tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (name) {
      if (name === "text") node.textContent = attrs[name];
      else if (attrs[name] === true) node.setAttribute(name, "");
      else if (attrs[name] !== false && attrs[name] !== undefined) node.setAttribute(name, attrs[name]);
    });
    (children || []).forEach(function (child) { node.appendChild(child); });
    return node;
  };
  var show = function (step) {
    var steps = document.querySelectorAll("section[data-step]");
    for (var i = 0; i < steps.length; i++) steps[i].hidden = steps[i].getAttribute("data-step") !== step;
    document.body.setAttribute("data-step", step);
    $("participant-tools").hidden = !state.token || step === "withdrawn";
  };

  var question = function (q, i) {
    var id = "q" + i, label = q.text + (q.required ? " *" : "");
    var attrs = { id: id, "data-question": q.id, "data-kind": q.kind, required: q.required };
    if (q.kind === "text") return el("div", {}, [el("label", { for: id, text: label }), el("input", Object.assign({ type: "text" }, attrs))]);
    if (q.kind === "number") return el("div", {}, [el("label", { for: id, text: label }), el("input", Object.assign({ type: "number", step: "any" }, attrs))]);
    if (q.kind === "choice") {
      var options = [el("option", { value: "", text: "Choose…" })].concat(q.options.map(function (o) { return el("option", { value: o, text: o }); }));
      return el("div", {}, [el("label", { for: id, text: label }), el("select", attrs, options)]);
    }
    // boolean (yes / no) and multi_choice: a group of inputs.
    var choices = q.kind === "boolean" ? [["true", "Yes"], ["false", "No"]] : q.options.map(function (o) { return [o, o]; });
    var type = q.kind === "boolean" ? "radio" : "checkbox";
    return el("fieldset", { "data-question": q.id, "data-kind": q.kind, id: id }, [el("legend", { text: label })].concat(choices.map(function (c, j) {
      return el("label", { class: "check" }, [el("input", { type: type, name: id, value: c[0], id: id + "-" + j, required: type === "radio" && q.required }), el("span", { text: c[1] })]);
    })));
  };
  var answers = function () {
    var out = {};
    state.project.questions.forEach(function (q, i) {
      var node = $("q" + i);
      if (q.kind === "text" || q.kind === "choice") { if (node.value !== "") out[q.id] = node.value; }
      else if (q.kind === "number") { if (node.value !== "") out[q.id] = Number(node.value); }
      else {
        var picked = Array.prototype.map.call(node.querySelectorAll("input:checked"), function (input) { return input.value; });
        if (q.kind === "boolean") { if (picked.length > 0) out[q.id] = picked[0] === "true"; }
        else if (picked.length > 0) out[q.id] = picked;
      }
    });
    return out;
  };

  var renderProject = function () {
    var p = state.project;
    document.title = p.name + " · Recording";
    $("project-name").textContent = p.name;
    $("questions").replaceChildren.apply($("questions"), p.questions.map(question));
    $("consent-text").textContent = p.consent.text;
    $("scopes").replaceChildren.apply($("scopes"), p.consent.scopes.map(function (s, i) {
      return el("label", { class: "check scope" }, [
        el("input", { type: "checkbox", id: "scope-" + i, "data-scope": s.id, "data-testid": "scope-" + s.id, "data-required": s.required ? "true" : "false" }),
        el("span", { text: s.label }),
        s.required ? el("span", { class: "tag", text: "required" }) : el("span", { class: "tag optional", text: "optional" })
      ]);
    }));
  };

  var renderProgress = function (participant) {
    var sent = 0, total = 0;
    $("prompt-list").replaceChildren.apply($("prompt-list"), participant.prompts.map(function (p) {
      sent += p.takes; total += p.takes + p.remaining;
      var done = p.remaining === 0;
      var item = el("li", { "data-prompt": p.id, "data-takes": String(p.takes), "data-remaining": String(p.remaining), class: done ? "done" : "" }, [
        el("span", { class: "prompt-text", text: p.text }),
        el("span", { class: "count", text: p.takes + " sent · " + p.remaining + " left" })
      ]);
      if (!done && participant.state === "active") item.addEventListener("click", function () { if (!state.capture) { state.promptId = p.id; showPrompt(); } });
      return item;
    }));
    $("progress-text").textContent = sent + " of " + total + " takes sent";
    $("progress").setAttribute("data-sent", String(sent));
    $("progress").setAttribute("data-total", String(total));
    $("progress-bar").style.width = (total === 0 ? 0 : Math.round(100 * sent / total)) + "%";
    $("progress-section").hidden = false;
  };

  var STATUS = { pending_review: "waiting for review", accepted: "accepted", rejected: "not accepted" };
  var renderTakes = function (takes) {
    var texts = {};
    state.project.prompts.forEach(function (p) { texts[p.id] = p.text; });
    $("takes").replaceChildren.apply($("takes"), takes.map(function (t) {
      return el("li", { "data-take": t.id, "data-status": t.status }, [
        el("span", { class: "prompt-text", text: texts[t.prompt_id] || t.prompt_id }),
        el("span", { class: "count", text: (t.duration_ms / 1000).toFixed(1) + " s" }),
        el("span", { class: "badge " + t.status, text: STATUS[t.status] || t.status, title: t.review_note || "" })
      ]);
    }));
    $("takes-section").hidden = takes.length === 0;
  };

  // ---- the steps --------------------------------------------------------------------------
  var refresh = function () {
    return call("GET", "/ingest/participant").then(function (participant) {
      state.participant = participant;
      renderProgress(participant);
      if (participant.state === "withdrawn") return gone("You withdrew from this project earlier; your recordings were deleted.");
      if (participant.state === "needs_consent") return show("consent");
      return call("GET", "/ingest/items").then(function (list) {
        renderTakes(list.data);
        if (participant.state === "complete") return show("done");
        return showPrompt();
      });
    }).catch(function (error) {
      // A token the server no longer knows (withdrawn, or another server's): start afresh.
      if (error.status !== 401) throw error;
      forget();
      show("start");
      showError(error);
    });
  };

  var gone = function (text) {
    forget();
    $("withdrawn-text").textContent = text;
    $("progress-section").hidden = true;
    $("takes-section").hidden = true;
    show("withdrawn");
  };

  var start = function (event) {
    event.preventDefault();
    clearMessages();
    // The browser checks the other required fields; "at least one box" it cannot.
    var unanswered = state.project.questions.filter(function (q, i) {
      return q.kind === "multi_choice" && q.required && $("q" + i).querySelectorAll("input:checked").length === 0;
    });
    if (unanswered.length > 0) { showError(new Error("Please answer: " + unanswered.map(function (q) { return q.text; }).join("; "))); return; }
    var button = $("start"), body = { country: $("country").value.trim().toUpperCase(), dob: $("dob").value, answers: answers() };
    if ($("region").value.trim() !== "") body.region = $("region").value.trim();
    busy(button, true);
    say("pow-status", "Checking this browser with a short computation…");
    call("GET", "/ingest/challenge").then(function (challenge) {
      return solveChallenge(challenge.challenge, challenge.difficulty, function (tried) {
        say("pow-status", "Checking this browser with a short computation… (" + tried + " tries)");
      }).then(function (nonce) {
        body.challenge = challenge.challenge;
        body.nonce = nonce;
        return call("POST", "/ingest/participants", { json: body, headers: { "x-device-id": deviceId() } });
      });
    }).then(function (created) {
      state.token = created.token;
      localStorage.setItem(tokenKey(), created.token);
      return refresh();
    }).catch(showError).then(function () { busy(button, false); say("pow-status", ""); });
  };

  var consent = function () {
    clearMessages();
    var given = {}, missing = [];
    var boxes = document.querySelectorAll("[data-scope]");
    for (var i = 0; i < boxes.length; i++) {
      if (boxes[i].checked) given[boxes[i].getAttribute("data-scope")] = true;
      else if (boxes[i].getAttribute("data-required") === "true") missing.push(boxes[i].nextSibling.textContent);
    }
    if (missing.length > 0) { showError(new Error("To take part, tick every required item: " + missing.join("; ") + ".")); return; }
    busy($("agree"), true);
    call("POST", "/ingest/participant/consent", { json: { given: given } })
      .then(refresh).catch(showError).then(function () { busy($("agree"), false); });
  };

  var recorder = function (mode) {
    $("step-record").setAttribute("data-state", mode);
    $("record").hidden = mode !== "idle";
    $("stop").hidden = mode !== "recording";
    $("rerecord").hidden = mode !== "recorded";
    $("send").hidden = mode !== "recorded" && mode !== "sending";
    $("send").disabled = mode === "sending" || (state.take !== null && state.take.tooShort);
    $("preview").hidden = mode !== "recorded" && mode !== "sending";
    if (mode !== "recording") $("level").style.width = "0%";
  };
  var clock = function (seconds) { var s = Math.floor(seconds); return Math.floor(s / 60) + ":" + (s % 60 < 10 ? "0" : "") + (s % 60); };

  var showPrompt = function () {
    var prompts = state.participant.prompts, open = prompts.filter(function (p) { return p.remaining > 0; });
    if (open.length === 0) return show("done");
    var prompt = open.filter(function (p) { return p.id === state.promptId; })[0] || open[0];
    state.promptId = prompt.id;
    state.take = null;
    $("prompt-count").textContent = "Prompt " + (prompts.indexOf(prompt) + 1) + " of " + prompts.length;
    $("prompt-text").textContent = prompt.text;
    $("prompt-text").setAttribute("data-prompt", prompt.id);
    $("timer").textContent = "0:00";
    say("take-note", "");
    var items = $("prompt-list").children;
    for (var i = 0; i < items.length; i++) items[i].classList.toggle("current", items[i].getAttribute("data-prompt") === prompt.id);
    recorder("idle");
    show("record");
  };

  var record = function () {
    clearMessages();
    var capture = state.project.capture;
    // Stop before the take outgrows what the project accepts: its length, or its bytes.
    var byBytes = (capture.max_bytes - 44) / (2 * capture.sample_rate_hz);
    var max = capture.max_seconds === null ? byBytes : Math.min(capture.max_seconds, byBytes);
    busy($("record"), true);
    startCapture(capture.sample_rate_hz, function (rms, seconds) {
      // -60 dBFS (silence) to 0 dBFS (full scale), as a recorder's meter shows it.
      var db = 20 * Math.log10(Math.max(rms, 0.001));
      $("level").style.width = Math.max(0, Math.min(100, Math.round((db + 60) * 100 / 60))) + "%";
      $("timer").textContent = clock(seconds) + " / " + clock(max);
      if (seconds >= max && state.capture) stop();
    }).then(function (running) {
      state.capture = running;
      recorder("recording");
    }).catch(function (error) {
      showError(new Error("The microphone could not be used: " + ((error && error.message) || error) + ". Allow it for this page and try again."));
    }).then(function () { busy($("record"), false); });
  };

  var stop = function () {
    var running = state.capture, capture = state.project.capture;
    state.capture = null;
    var samples = running.stop(), wav = encodeWav(samples, capture.sample_rate_hz);
    var seconds = samples.length / capture.sample_rate_hz;
    var tooShort = capture.min_seconds !== null && seconds < capture.min_seconds;
    state.take = { wav: wav, seconds: seconds, captureRate: running.captureRate, tooShort: tooShort, sha256: null };
    $("timer").textContent = clock(seconds) + " recorded";
    if ($("preview").src) URL.revokeObjectURL($("preview").src);
    $("preview").src = URL.createObjectURL(new Blob([wav], { type: "audio/wav" }));
    say("take-note", tooShort ? "This take is " + seconds.toFixed(1) + " s; the project needs at least " + capture.min_seconds + " s. Record it again." : "");
    recorder("recorded");
  };

  var send = function () {
    clearMessages();
    var take = state.take, capture = state.project.capture;
    var meta = { capture: { sample_rate_hz: capture.sample_rate_hz, device_sample_rate_hz: take.captureRate, duration_ms: Math.round(take.seconds * 1000), user_agent: navigator.userAgent.slice(0, 300) } };
    recorder("sending");
    sha256Hex(take.wav).then(function (sha256) {
      return call("POST", "/ingest/items?prompt=" + encodeURIComponent(state.promptId), {
        body: take.wav,
        headers: { "content-type": "audio/wav", "x-content-sha256": sha256, "x-fieldwork-meta": base64url(JSON.stringify(meta)) }
      });
    }).then(function () {
      state.promptId = null;
      return refresh().then(function () { notice("Thank you: your take was sent."); });
    }).catch(function (error) { recorder("recorded"); showError(error); });
  };

  var withdraw = function () {
    clearMessages();
    busy($("withdraw-yes"), true);
    call("POST", "/ingest/participant/withdraw").then(function (done) {
      $("withdraw-confirm").hidden = true;
      var n = done.deleted_takes;
      gone("You have withdrawn from this project. " + (n === 1 ? "Your recording was" : "Your " + n + " recordings were") + " deleted, and this browser forgot you.");
    }).catch(showError).then(function () { busy($("withdraw-yes"), false); });
  };

  // ---- wiring -----------------------------------------------------------------------------
  $("start-form").addEventListener("submit", start);
  $("agree").addEventListener("click", consent);
  $("record").addEventListener("click", record);
  $("stop").addEventListener("click", stop);
  $("rerecord").addEventListener("click", function () { if (state.capture) return; state.take = null; recorder("idle"); record(); });
  $("send").addEventListener("click", send);
  $("withdraw").addEventListener("click", function () { $("withdraw-confirm").hidden = false; $("withdraw").hidden = true; });
  $("withdraw-no").addEventListener("click", function () { $("withdraw-confirm").hidden = true; $("withdraw").hidden = false; });
  $("withdraw-yes").addEventListener("click", withdraw);

  // Another link pasted into the address bar changes only the fragment: start again with its key.
  window.addEventListener("hashchange", function () { location.reload(); });
  var broken = function (error) { $("project-name").textContent = "This link does not work"; show("none"); showError(error); };
  if (!key) { broken(new Error("This link has no key. Open the link the research team gave you.")); return; }
  call("GET", "/ingest/project").then(function (project) {
    state.project = project;
    renderProject();
    state.token = localStorage.getItem(tokenKey());
    if (!state.token) return show("start");
    return refresh();
  }).catch(function (error) { if (state.project) { show("none"); showError(error); } else broken(error); });
`
