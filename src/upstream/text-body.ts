/** An answer's bytes as text, the way undici's body.text() gives it: UTF-8, a leading byte order mark dropped. */
const UTF8_BOM = 0xfeff;

export function textOf(bytes: Buffer | undefined): string {
  const text = bytes === undefined ? '' : bytes.toString('utf8');
  return text.charCodeAt(0) === UTF8_BOM ? text.slice(1) : text;
}
