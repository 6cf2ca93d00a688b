/**
 * The participant page's helpers, as browser script text (plain ES2017, no build step, no
 * backslashes so the template literal is the script verbatim): hashing and the proof of work with
 * crypto.subtle, capturing the microphone with Web Audio, and encoding the take as the WAV the
 * ingest route accepts (16-bit mono PCM, 44-byte header, at the project's rate). RecordPage.ts
 * inlines it before the flow (RecordPageScript.ts), in one function scope.
 */
export const AUDIO_SCRIPT = `
  // ---- hashing and the proof of work ------------------------------------------------------
  var toHex = function (buffer) {
    var bytes = new Uint8Array(buffer), out = "";
    for (var i = 0; i < bytes.length; i++) out += (bytes[i] < 16 ? "0" : "") + bytes[i].toString(16);
    return out;
  };
  var sha256Hex = function (bytes) { return crypto.subtle.digest("SHA-256", bytes).then(toHex); };
  var leadingZeroBits = function (buffer) {
    var bytes = new Uint8Array(buffer), n = 0;
    for (var i = 0; i < bytes.length; i++) {
      if (bytes[i] === 0) { n += 8; continue; }
      return n + Math.clz32(bytes[i]) - 24;
    }
    return n;
  };
  /**
   * A nonce (a decimal string) such that SHA-256(challenge + nonce) starts with difficulty zero
   * bits. Digests are asked for in batches: crypto.subtle is asynchronous, and many in flight at
   * once run far faster than one at a time.
   */
  var solveChallenge = function (challenge, difficulty, onProgress) {
    var encoder = new TextEncoder();
    var BATCH = 1024;
    var tried = 0;
    var next = function () {
      var digests = [];
      for (var i = 0; i < BATCH; i++) digests.push(crypto.subtle.digest("SHA-256", encoder.encode(challenge + String(tried + i))));
      return Promise.all(digests).then(function (results) {
        for (var i = 0; i < results.length; i++) if (leadingZeroBits(results[i]) >= difficulty) return String(tried + i);
        tried += BATCH;
        if (onProgress) onProgress(tried);
        return next();
      });
    };
    return next();
  };
  var base64url = function (text) {
    var bytes = new TextEncoder().encode(text), binary = "";
    for (var i = 0; i < bytes.length; i++) binary += String.fromCharCode(bytes[i]);
    return btoa(binary).split("+").join("-").split("/").join("_").split("=").join("");
  };

  // ---- capture ----------------------------------------------------------------------------
  /** Linear interpolation: used only when the browser cannot run Web Audio at the project's rate. */
  var resample = function (samples, from, to) {
    if (from === to) return samples;
    var out = new Float32Array(Math.floor(samples.length * to / from));
    for (var i = 0; i < out.length; i++) {
      var at = i * from / to, j = Math.floor(at), f = at - j;
      out[i] = samples[j] * (1 - f) + (j + 1 < samples.length ? samples[j + 1] : samples[j]) * f;
    }
    return out;
  };
  /** Web Audio at the project's rate when the browser can, else at its own (resampled at stop). */
  var connect = function (stream, rate) {
    var context = null;
    try {
      context = new AudioContext({ sampleRate: rate });
      return { context: context, source: context.createMediaStreamSource(stream) };
    } catch (error) {
      if (context) context.close();
      context = new AudioContext();
      return { context: context, source: context.createMediaStreamSource(stream) };
    }
  };
  /**
   * Starts recording the microphone; onLevel(rms, seconds) is called for every buffer. Resolves
   * to {stop} once recording runs; stop() releases the microphone and answers the mono samples at
   * the project's rate.
   */
  var startCapture = function (rate, onLevel) {
    var constraints = { audio: { channelCount: 1, echoCancellation: false, noiseSuppression: false, autoGainControl: false } };
    return navigator.mediaDevices.getUserMedia(constraints).then(function (stream) {
      var audio = connect(stream, rate);
      var context = audio.context, source = audio.source;
      var processor = context.createScriptProcessor(4096, 1, 1);
      var chunks = [], length = 0, stopped = false;
      processor.onaudioprocess = function (event) {
        if (stopped) return;
        var input = event.inputBuffer.getChannelData(0);
        chunks.push(new Float32Array(input));
        length += input.length;
        var sum = 0;
        for (var i = 0; i < input.length; i++) sum += input[i] * input[i];
        onLevel(Math.sqrt(sum / input.length), length / context.sampleRate);
      };
      // A ScriptProcessor runs only while connected to the output; it writes silence there.
      source.connect(processor);
      processor.connect(context.destination);
      var release = function () {
        stopped = true;
        processor.disconnect();
        source.disconnect();
        stream.getTracks().forEach(function (track) { track.stop(); });
        context.close();
      };
      return context.resume().then(function () {
        return {
          captureRate: context.sampleRate,
          cancel: release,
          stop: function () {
            release();
            var samples = new Float32Array(length), at = 0;
            chunks.forEach(function (chunk) { samples.set(chunk, at); at += chunk.length; });
            return resample(samples, context.sampleRate, rate);
          }
        };
      });
    });
  };

  // ---- WAV --------------------------------------------------------------------------------
  /** 16-bit mono PCM with the canonical 44-byte header. */
  var encodeWav = function (samples, rate) {
    var buffer = new ArrayBuffer(44 + samples.length * 2), view = new DataView(buffer);
    var text = function (at, s) { for (var i = 0; i < s.length; i++) view.setUint8(at + i, s.charCodeAt(i)); };
    text(0, "RIFF");
    view.setUint32(4, 36 + samples.length * 2, true);
    text(8, "WAVE");
    text(12, "fmt ");
    view.setUint32(16, 16, true);
    view.setUint16(20, 1, true); // PCM
    view.setUint16(22, 1, true); // mono
    view.setUint32(24, rate, true);
    view.setUint32(28, rate * 2, true);
    view.setUint16(32, 2, true);
    view.setUint16(34, 16, true);
    text(36, "data");
    view.setUint32(40, samples.length * 2, true);
    for (var i = 0; i < samples.length; i++) {
      var s = Math.max(-1, Math.min(1, samples[i]));
      view.setInt16(44 + i * 2, s < 0 ? s * 32768 : s * 32767, true);
    }
    return new Uint8Array(buffer);
  };
`
