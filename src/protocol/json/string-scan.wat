;; The end of a JSON string's interior, sixteen bytes at a time (WebAssembly SIMD), for src/protocol/json/string-scan.ts.
;; Memory: bytes 0-255 hold, per byte after a backslash, 1 for a one-character escape and 2 for `u`; 256-511 hold 1
;; per hex digit (json-bytes.ts's tables, which string-scan.ts copies in). The bytes to scan are copied from 512 and
;; followed by 32 zero bytes: a zero is a control character, so the scan stops there without a length to compare
;; against.
;; Build: node scripts/build-wasm.mjs (writes string-scan-wasm.ts; a test checks that file matches this one).
(module
  (memory (export "memory") 1)
  (global $errAt (export "errAt") (mut i32) (i32.const 0))
  (global $escSeen (export "escSeen") (mut i32) (i32.const 0))
  ;; From the interior's first byte at $p: the closing quote's address times two, plus one if an escape came
  ;; before it; or -2 for a control character (or the zeros after the bytes) at errAt; or -3 for a backslash at
  ;; errAt whose escape is not one this reads (invalid, or running into the zeros). escSeen: an escape came
  ;; before the stop.
  (func (export "stringEnd") (param $p i32) (result i32)
    (local $base i32) (local $m i32) (local $at i32) (local $c i32) (local $next i32) (local $esc i32) (local $v v128)
    (local.set $next (local.get $p))
    (local.set $base (local.get $p))
    (loop $chunk
      (local.set $v (v128.load (local.get $base)))
      ;; One bit per byte that is a quote, a backslash or below 0x20, none below $next (inside an escape).
      (local.set $m
        (i32.and
          (i8x16.bitmask
            (v128.or
              (v128.or
                (i8x16.eq (local.get $v) (v128.const i8x16 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22))
                (i8x16.eq (local.get $v) (v128.const i8x16 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c)))
              (i8x16.lt_u (local.get $v) (v128.const i8x16 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20))))
          (if (result i32) (i32.gt_s (local.get $next) (local.get $base))
            (then (i32.shl (i32.const -1) (i32.sub (local.get $next) (local.get $base))))
            (else (i32.const -1)))))
      (block $done
        (loop $bits
          (br_if $done (i32.eqz (local.get $m)))
          (local.set $at (i32.add (local.get $base) (i32.ctz (local.get $m))))
          (local.set $c (i32.load8_u (local.get $at)))
          (if (i32.eq (local.get $c) (i32.const 0x22))
            (then (return (i32.or (i32.shl (local.get $at) (i32.const 1)) (local.get $esc)))))
          (global.set $escSeen (local.get $esc))
          (global.set $errAt (local.get $at))
          (if (i32.ne (local.get $c) (i32.const 0x5c))
            (then (return (i32.const -2))))
          (local.set $esc (i32.const 1))
          (local.set $c (i32.load8_u (i32.load8_u offset=1 (local.get $at))))
          (if (i32.eq (local.get $c) (i32.const 1))
            (then (local.set $next (i32.add (local.get $at) (i32.const 2))))
            (else
              (if (i32.ne (local.get $c) (i32.const 2))
                (then (return (i32.const -3))))
              (if (i32.eqz
                    (i32.and
                      (i32.and (i32.load8_u offset=256 (i32.load8_u offset=2 (local.get $at)))
                               (i32.load8_u offset=256 (i32.load8_u offset=3 (local.get $at))))
                      (i32.and (i32.load8_u offset=256 (i32.load8_u offset=4 (local.get $at)))
                               (i32.load8_u offset=256 (i32.load8_u offset=5 (local.get $at))))))
                (then (return (i32.const -3))))
              (local.set $next (i32.add (local.get $at) (i32.const 6)))))
          ;; Drop the bits the escape covered (a shift of 16 or more leaves none of the sixteen).
          (local.set $m (i32.and (local.get $m) (i32.shl (i32.const -1) (i32.sub (local.get $next) (local.get $base)))))
          (br $bits)))
      (local.set $base (i32.add (local.get $base) (i32.const 16)))
      (br $chunk))
    (unreachable))
)
