/**
 * Reads a take's WAV header (docs/fieldwork.md "A take"): RIFF/WAVE with a PCM `fmt ` chunk and a
 * `data` chunk, walked chunk by chunk (other chunks, such as LIST, are skipped). Only the header
 * is trusted after this check: channels, bits, rate and the samples' length.
 */
export interface WavFormat {
  readonly channels: number
  readonly bitsPerSample: number
  readonly sampleRateHz: number
  /** Bytes of samples in the data chunk. */
  readonly dataBytes: number
  readonly durationMs: number
}

export type WavProblem = { readonly code: "invalid_wav"; readonly message: string }

const ascii = (bytes: Uint8Array, at: number) => String.fromCharCode(bytes[at]!, bytes[at + 1]!, bytes[at + 2]!, bytes[at + 3]!)

const invalid = (message: string): WavProblem => ({ code: "invalid_wav", message: `The body is not a PCM WAV file: ${message}.` })

/** The take's format, or why it is not a PCM WAV. */
export const readWav = (bytes: Uint8Array): WavFormat | WavProblem => {
  if (bytes.length < 12 || ascii(bytes, 0) !== "RIFF" || ascii(bytes, 8) !== "WAVE") return invalid("no RIFF/WAVE header")
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  let format: { channels: number; bits: number; rate: number; blockAlign: number } | undefined
  let at = 12
  while (at + 8 <= bytes.length) {
    const id = ascii(bytes, at)
    const size = view.getUint32(at + 4, true)
    const body = at + 8
    if (id === "fmt ") {
      if (size < 16 || body + 16 > bytes.length) return invalid("the fmt chunk is too short")
      const audioFormat = view.getUint16(body, true)
      // 1: PCM; 0xFFFE: WAVE_FORMAT_EXTENSIBLE, PCM when its sub-format says so (checked loosely).
      if (audioFormat !== 1 && audioFormat !== 0xfffe) return invalid(`audio format ${audioFormat} is not PCM`)
      format = {
        channels: view.getUint16(body + 2, true),
        rate: view.getUint32(body + 4, true),
        blockAlign: view.getUint16(body + 12, true),
        bits: view.getUint16(body + 14, true)
      }
    } else if (id === "data") {
      if (format === undefined) return invalid("the data chunk comes before the fmt chunk")
      if (format.rate === 0 || format.channels === 0 || format.blockAlign === 0) return invalid("the fmt chunk has zeros")
      // A streaming writer may leave the size at its maximum: then the data runs to the end.
      const dataBytes = Math.min(size, bytes.length - body)
      const frames = Math.floor(dataBytes / format.blockAlign)
      return {
        channels: format.channels,
        bitsPerSample: format.bits,
        sampleRateHz: format.rate,
        dataBytes,
        durationMs: Math.round((frames * 1000) / format.rate)
      }
    }
    // Chunks are padded to an even size.
    at = body + size + (size % 2)
  }
  return invalid(format === undefined ? "no fmt chunk" : "no data chunk")
}

/** A 16-bit mono PCM WAV of `samples` (-1..1) at `rate`: for tests and tools. */
export const encodeWav = (samples: ArrayLike<number>, rate: number): Uint8Array => {
  const bytes = new Uint8Array(44 + samples.length * 2)
  const view = new DataView(bytes.buffer)
  const text = (at: number, s: string) => {
    for (let i = 0; i < 4; i++) bytes[at + i] = s.charCodeAt(i)
  }
  text(0, "RIFF")
  view.setUint32(4, 36 + samples.length * 2, true)
  text(8, "WAVE")
  text(12, "fmt ")
  view.setUint32(16, 16, true)
  view.setUint16(20, 1, true)
  view.setUint16(22, 1, true)
  view.setUint32(24, rate, true)
  view.setUint32(28, rate * 2, true)
  view.setUint16(32, 2, true)
  view.setUint16(34, 16, true)
  text(36, "data")
  view.setUint32(40, samples.length * 2, true)
  for (let i = 0; i < samples.length; i++) {
    const s = Math.max(-1, Math.min(1, samples[i]!))
    view.setInt16(44 + i * 2, Math.round(s * 32767), true)
  }
  return bytes
}
