import { parseAbi } from 'viem';

/** Permit2's canonical address (the same on every chain; placed with anvil_setCode locally). */
export const PERMIT2_ADDRESS = '0x000000000022D473030F116dDEE9F6B43aC78BA3' as const;
/** x402's upto Permit2 proxy (CREATE2, the same on every chain): the spender of every upto permit. */
export const X402_UPTO_PERMIT2_PROXY_ADDRESS = '0x4020A4f3b7b90ccA423B9fabCc0CE57C6C240002' as const;

/** Permit2's SignatureTransfer surface (contracts/Permit2.sol; Uniswap's Permit2 has the same). */
export const permit2Abi = parseAbi([
  'struct TokenPermissions { address token; uint256 amount; }',
  'struct PermitTransferFrom { TokenPermissions permitted; uint256 nonce; uint256 deadline; }',
  'struct SignatureTransferDetails { address to; uint256 requestedAmount; }',
  'function DOMAIN_SEPARATOR() view returns (bytes32)',
  'function nonceBitmap(address owner, uint256 wordPosition) view returns (uint256)',
  'function invalidateUnorderedNonces(uint256 wordPos, uint256 mask)',
  'function permitTransferFrom(PermitTransferFrom permit, SignatureTransferDetails transferDetails, address owner, bytes signature)',
  'function permitWitnessTransferFrom(PermitTransferFrom permit, SignatureTransferDetails transferDetails, address owner, bytes32 witness, string witnessTypeString, bytes signature)',
  'event UnorderedNonceInvalidation(address indexed owner, uint256 word, uint256 mask)',
  'error SignatureExpired(uint256 signatureDeadline)',
  'error InvalidAmount(uint256 maxAmount)',
  'error InvalidNonce()',
  'error InvalidSignatureLength()',
  'error InvalidSignature()',
  'error InvalidSigner()',
  'error InvalidContractSignature()',
]);

/** x402's upto Permit2 proxy (contracts/X402UptoPermit2Proxy.sol), with Permit2's errors so reverts through it decode. */
export const x402UptoPermit2ProxyAbi = parseAbi([
  'struct TokenPermissions { address token; uint256 amount; }',
  'struct PermitTransferFrom { TokenPermissions permitted; uint256 nonce; uint256 deadline; }',
  'struct Witness { address to; address facilitator; uint256 validAfter; }',
  'struct EIP2612Permit { uint256 value; uint256 deadline; bytes32 r; bytes32 s; uint8 v; }',
  'function PERMIT2() view returns (address)',
  'function WITNESS_TYPE_STRING() view returns (string)',
  'function settle(PermitTransferFrom permit, uint256 amount, address owner, Witness witness, bytes signature)',
  'function settleWithPermit(EIP2612Permit permit2612, PermitTransferFrom permit, uint256 amount, address owner, Witness witness, bytes signature)',
  'event Settled()',
  'event SettledWithPermit()',
  'error AmountExceedsPermitted()',
  'error UnauthorizedFacilitator()',
  'error InvalidAmount()',
  'error InvalidOwner()',
  'error InvalidDestination()',
  'error PaymentTooEarly()',
  'error Permit2612AmountMismatch()',
  'error ReentrancyGuardReentrantCall()',
  'error SignatureExpired(uint256 signatureDeadline)',
  'error InvalidNonce()',
  'error InvalidSignatureLength()',
  'error InvalidSignature()',
  'error InvalidSigner()',
  'error InvalidContractSignature()',
  'error ERC20InsufficientBalance(address sender, uint256 balance, uint256 needed)',
  'error ERC20InsufficientAllowance(address spender, uint256 allowance, uint256 needed)',
]);

/** The EIP-712 types an upto payer signs (PermitWitnessTransferFrom with the upto Witness), domain ("Permit2", chainId, PERMIT2_ADDRESS). */
export const uptoPermit2Types = {
  PermitWitnessTransferFrom: [
    { name: 'permitted', type: 'TokenPermissions' },
    { name: 'spender', type: 'address' },
    { name: 'nonce', type: 'uint256' },
    { name: 'deadline', type: 'uint256' },
    { name: 'witness', type: 'Witness' },
  ],
  TokenPermissions: [
    { name: 'token', type: 'address' },
    { name: 'amount', type: 'uint256' },
  ],
  Witness: [
    { name: 'to', type: 'address' },
    { name: 'facilitator', type: 'address' },
    { name: 'validAfter', type: 'uint256' },
  ],
} as const;
