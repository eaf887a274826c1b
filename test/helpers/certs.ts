/** A self-signed certificate for localhost / 127.0.0.1 (its own CA), made by openssl at test time in `dir`. */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

export interface Pem {
  cert: string;
  key: string;
}

export function makeCert(dir: string, name: string): Pem {
  const cert = join(dir, `${name}-cert.pem`);
  const key = join(dir, `${name}-key.pem`);
  execFileSync('/usr/bin/openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
    '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1', '-keyout', key, '-out', cert,
  ], { stdio: 'ignore' });
  return { cert, key };
}
