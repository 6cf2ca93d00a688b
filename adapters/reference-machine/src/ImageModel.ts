/**
 * `ref-image`: a deterministic PNG drawn from the prompt. See docs/reference-machine.md.
 */
import { fnv1a, invalidInput } from "./Errors.ts"
import { encodePng } from "./Png.ts"

export const DEFAULT_SIZE = 64
export const MAX_SIDE = 256
export const MAX_IMAGES = 4

export interface ImageRequest {
  readonly model: string
  readonly prompt: string
  readonly width: number
  readonly height: number
  readonly n: number
  readonly responseFormat: "b64_json" | "url"
}

/**
 * `size` absent, null or "auto" gives 64x64; "WxH" gives that size, scaled down (keeping the
 * aspect ratio) so that neither side exceeds 256.
 */
export const parseSize = (size: unknown): { width: number; height: number } => {
  if (size === undefined || size === null || size === "auto") return { width: DEFAULT_SIZE, height: DEFAULT_SIZE }
  const m = typeof size === "string" ? /^(\d{1,5})x(\d{1,5})$/.exec(size) : null
  const w = m === null ? 0 : Number(m[1])
  const h = m === null ? 0 : Number(m[2])
  if (w < 1 || h < 1) throw invalidInput("size", "size must be \"auto\" or \"WIDTHxHEIGHT\", e.g. \"64x64\"")
  const scale = Math.min(1, MAX_SIDE / Math.max(w, h))
  return { width: Math.max(1, Math.round(w * scale)), height: Math.max(1, Math.round(h * scale)) }
}

export const parseImageRequest = (body: Record<string, unknown>, model: string): ImageRequest => {
  if (typeof body.prompt !== "string" || body.prompt.trim().length === 0) {
    throw invalidInput("prompt", "prompt must be a non-empty string")
  }
  const n = body.n ?? 1
  if (typeof n !== "number" || !Number.isSafeInteger(n) || n < 1 || n > MAX_IMAGES) {
    throw invalidInput("n", `n must be an integer from 1 to ${MAX_IMAGES}`)
  }
  const rf = body.response_format ?? "b64_json"
  if (rf !== "b64_json" && rf !== "url") throw invalidInput("response_format", "response_format must be \"b64_json\" or \"url\"")
  const of = body.output_format
  if (of !== undefined && of !== null && of !== "png") throw invalidInput("output_format", "this model writes png only")
  return { model, prompt: body.prompt, ...parseSize(body.size), n, responseFormat: rf }
}

const hsv = (h: number, s: number, v: number): [number, number, number] => {
  const i = Math.floor(h * 6)
  const f = h * 6 - i
  const p = v * (1 - s)
  const q = v * (1 - f * s)
  const t = v * (1 - (1 - f) * s)
  const [r, g, b] = [[v, t, p], [q, v, p], [p, v, t], [p, q, v], [t, p, v], [v, p, q]][((i % 6) + 6) % 6]!
  return [Math.round(r! * 255), Math.round(g! * 255), Math.round(b! * 255)]
}

/**
 * The picture: a diagonal gradient between two prompt-derived colours, overlaid with
 * concentric rings around a prompt-derived centre.
 */
export const render = (prompt: string, width: number, height: number, index = 0): Buffer => {
  const seed = fnv1a(`${index}\u0000${prompt}`)
  const c1 = hsv((seed & 0xff) / 256, 0.6, 0.95)
  const c2 = hsv(((seed >>> 8) & 0xff) / 256, 0.8, 0.45)
  const ring = hsv(((seed >>> 16) & 0xff) / 256, 0.9, 1)
  const cx = (((seed >>> 4) & 0x3f) / 63) * width
  const cy = (((seed >>> 10) & 0x3f) / 63) * height
  const period = 4 + ((seed >>> 24) & 0x0f)
  const rgb = new Uint8Array(width * height * 3)
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const t = (x + y) / Math.max(1, width + height - 2)
      const d = Math.hypot(x - cx, y - cy)
      const onRing = Math.floor(d / period) % 2 === 0 && d < Math.max(width, height) * 0.6
      const o = (y * width + x) * 3
      for (let k = 0; k < 3; k++) {
        const base = c1[k]! * (1 - t) + c2[k]! * t
        rgb[o + k] = Math.round(onRing ? base * 0.5 + ring[k]! * 0.5 : base)
      }
    }
  }
  return encodePng(width, height, rgb)
}

export const runImages = (req: ImageRequest): Record<string, unknown> => {
  const data = Array.from({ length: req.n }, (_, i) => {
    const b64 = render(req.prompt, req.width, req.height, i).toString("base64")
    return req.responseFormat === "url" ? { url: `data:image/png;base64,${b64}` } : { b64_json: b64 }
  })
  return { created: Math.floor(Date.now() / 1000), data, output_format: "png" }
}
