import { createKeccak, type IHasher } from 'hash-wasm';
import { keccak256 as viemKeccak256, type ByteArray, type Hex } from 'viem';

let wasm: IHasher | undefined;

/** Settles once the WebAssembly keccak is ready (it is compiled asynchronously, when this module loads). */
export const keccakReady: Promise<void> = createKeccak(256).then(
  (hasher) => {
    wasm = hasher;
  },
  () => undefined, // viem's keccak256 stays in use
);

const EVEN_HEX = /^0x(?:[0-9a-fA-F]{2})*$/;

/**
 * keccak256 as viem's gives it (0x-prefixed lowercase hex), computed in WebAssembly (hash-wasm) for the hashes every
 * /verify and /settle makes: the EIP-3009 digest, the signer's address, the transaction's hash. viem's, in JavaScript,
 * took 23 µs for 64 bytes and 64 µs for 400 (a signed settlement) on the 2-vCPU machine, against 2.0 and 4.3 µs here:
 * about 0.2 CPU-ms per settlement and 0.09 per verify (bench/README.md, "keccak in WebAssembly"). Until the module is
 * ready, and for hex that is not whole bytes (which viem reads its own way, or refuses), it is viem's.
 */
export function keccak256(value: Hex | ByteArray): Hex {
  if (!wasm) return viemKeccak256(value);
  let bytes: Uint8Array;
  if (typeof value !== 'string') bytes = value;
  else if (EVEN_HEX.test(value)) bytes = Buffer.from(value.slice(2), 'hex');
  else return viemKeccak256(value);
  // init, update and digest in one synchronous run: no other call can interleave
  wasm.init();
  wasm.update(bytes);
  return `0x${wasm.digest('hex')}`;
}

/** Which keccak256 is in use: WebAssembly once ready, viem's JavaScript before (or if WebAssembly failed). */
export function keccakImplementation(): 'webassembly' | 'javascript' {
  return wasm ? 'webassembly' : 'javascript';
}
