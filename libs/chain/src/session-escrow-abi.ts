// The ABI of contracts/EvmPaymentChannelEscrow.sol (the MPP evm session escrow), as a literal so viem types every call.
// test/chain/session-escrow.e2e-spec.ts checks it equals the compiled artifact.
export const sessionEscrowAbi = [
  {
    inputs: [],
    stateMutability: 'nonpayable',
    type: 'constructor',
  },
  {
    inputs: [],
    name: 'AmountExceedsDeposit',
    type: 'error',
  },
  {
    inputs: [],
    name: 'AmountNotIncreasing',
    type: 'error',
  },
  {
    inputs: [],
    name: 'AuthorizationExpired',
    type: 'error',
  },
  {
    inputs: [],
    name: 'ChannelAlreadyExists',
    type: 'error',
  },
  {
    inputs: [],
    name: 'ChannelFinalized',
    type: 'error',
  },
  {
    inputs: [],
    name: 'ChannelNotFound',
    type: 'error',
  },
  {
    inputs: [],
    name: 'CloseNotReady',
    type: 'error',
  },
  {
    inputs: [],
    name: 'DepositOverflow',
    type: 'error',
  },
  {
    inputs: [],
    name: 'InvalidShortString',
    type: 'error',
  },
  {
    inputs: [],
    name: 'InvalidSignature',
    type: 'error',
  },
  {
    inputs: [],
    name: 'NonceAlreadyUsed',
    type: 'error',
  },
  {
    inputs: [],
    name: 'NonceMismatch',
    type: 'error',
  },
  {
    inputs: [],
    name: 'NotPayee',
    type: 'error',
  },
  {
    inputs: [],
    name: 'NotPayer',
    type: 'error',
  },
  {
    inputs: [],
    name: 'ReentrancyGuardReentrantCall',
    type: 'error',
  },
  {
    inputs: [
      {
        name: 'token',
        type: 'address',
      },
    ],
    name: 'SafeERC20FailedOperation',
    type: 'error',
  },
  {
    inputs: [
      {
        name: 'str',
        type: 'string',
      },
    ],
    name: 'StringTooLong',
    type: 'error',
  },
  {
    inputs: [],
    name: 'ZeroDeposit',
    type: 'error',
  },
  {
    anonymous: false,
    inputs: [
      {
        indexed: true,
        name: 'channelId',
        type: 'bytes32',
      },
      {
        indexed: true,
        name: 'payer',
        type: 'address',
      },
      {
        indexed: true,
        name: 'payee',
        type: 'address',
      },
      {
        indexed: false,
        name: 'settledToPayee',
        type: 'uint256',
      },
      {
        indexed: false,
        name: 'refundedToPayer',
        type: 'uint256',
      },
    ],
    name: 'ChannelClosed',
    type: 'event',
  },
  {
    anonymous: false,
    inputs: [
      {
        indexed: true,
        name: 'channelId',
        type: 'bytes32',
      },
      {
        indexed: true,
        name: 'payer',
        type: 'address',
      },
      {
        indexed: true,
        name: 'payee',
        type: 'address',
      },
      {
        indexed: false,
        name: 'token',
        type: 'address',
      },
      {
        indexed: false,
        name: 'authorizedSigner',
        type: 'address',
      },
      {
        indexed: false,
        name: 'salt',
        type: 'bytes32',
      },
      {
        indexed: false,
        name: 'deposit',
        type: 'uint256',
      },
    ],
    name: 'ChannelOpened',
    type: 'event',
  },
  {
    anonymous: false,
    inputs: [
      {
        indexed: true,
        name: 'channelId',
        type: 'bytes32',
      },
      {
        indexed: true,
        name: 'payer',
        type: 'address',
      },
      {
        indexed: true,
        name: 'payee',
        type: 'address',
      },
    ],
    name: 'CloseRequestCancelled',
    type: 'event',
  },
  {
    anonymous: false,
    inputs: [
      {
        indexed: true,
        name: 'channelId',
        type: 'bytes32',
      },
      {
        indexed: true,
        name: 'payer',
        type: 'address',
      },
      {
        indexed: true,
        name: 'payee',
        type: 'address',
      },
      {
        indexed: false,
        name: 'closeGraceEnd',
        type: 'uint256',
      },
    ],
    name: 'CloseRequested',
    type: 'event',
  },
  {
    anonymous: false,
    inputs: [],
    name: 'EIP712DomainChanged',
    type: 'event',
  },
  {
    anonymous: false,
    inputs: [
      {
        indexed: true,
        name: 'channelId',
        type: 'bytes32',
      },
      {
        indexed: true,
        name: 'payer',
        type: 'address',
      },
      {
        indexed: true,
        name: 'payee',
        type: 'address',
      },
      {
        indexed: false,
        name: 'cumulativeAmount',
        type: 'uint256',
      },
      {
        indexed: false,
        name: 'deltaPaid',
        type: 'uint256',
      },
      {
        indexed: false,
        name: 'newSettled',
        type: 'uint256',
      },
    ],
    name: 'Settled',
    type: 'event',
  },
  {
    anonymous: false,
    inputs: [
      {
        indexed: true,
        name: 'channelId',
        type: 'bytes32',
      },
      {
        indexed: true,
        name: 'payer',
        type: 'address',
      },
      {
        indexed: true,
        name: 'payee',
        type: 'address',
      },
      {
        indexed: false,
        name: 'additionalDeposit',
        type: 'uint256',
      },
      {
        indexed: false,
        name: 'newDeposit',
        type: 'uint256',
      },
    ],
    name: 'TopUp',
    type: 'event',
  },
  {
    inputs: [
      {
        name: 'channelId',
        type: 'bytes32',
      },
      {
        name: 'cumulativeAmount',
        type: 'uint128',
      },
      {
        name: 'signature',
        type: 'bytes',
      },
    ],
    name: 'close',
    outputs: [],
    stateMutability: 'nonpayable',
    type: 'function',
  },
  {
    inputs: [],
    name: 'CLOSE_AUTHORIZATION_TYPEHASH',
    outputs: [
      {
        name: '',
        type: 'bytes32',
      },
    ],
    stateMutability: 'view',
    type: 'function',
  },
  {
    inputs: [],
    name: 'CLOSE_GRACE_PERIOD',
    outputs: [
      {
        name: '',
        type: 'uint64',
      },
    ],
    stateMutability: 'view',
    type: 'function',
  },
  {
    inputs: [
      {
        name: 'channelId',
        type: 'bytes32',
      },
      {
        name: 'cumulativeAmount',
        type: 'uint128',
      },
      {
        name: 'nonce',
        type: 'uint256',
      },
      {
        name: 'deadline',
        type: 'uint256',
      },
      {
        name: 'payeeSignature',
        type: 'bytes',
      },
      {
        name: 'voucherSignature',
        type: 'bytes',
      },
    ],
    name: 'closeWithAuthorization',
    outputs: [],
    stateMutability: 'nonpayable',
    type: 'function',
  },
  {
    inputs: [
      {
        name: 'payer',
        type: 'address',
      },
      {
        name: 'payee',
        type: 'address',
      },
      {
        name: 'token',
        type: 'address',
      },
      {
        name: 'salt',
        type: 'bytes32',
      },
      {
        name: 'authorizedSigner',
        type: 'address',
      },
    ],
    name: 'computeChannelId',
    outputs: [
      {
        name: '',
        type: 'bytes32',
      },
    ],
    stateMutability: 'view',
    type: 'function',
  },
  {
    inputs: [],
    name: 'domainSeparator',
    outputs: [
      {
        name: '',
        type: 'bytes32',
      },
    ],
    stateMutability: 'view',
    type: 'function',
  },
  {
    inputs: [],
    name: 'eip712Domain',
    outputs: [
      {
        name: 'fields',
        type: 'bytes1',
      },
      {
        name: 'name',
        type: 'string',
      },
      {
        name: 'version',
        type: 'string',
      },
      {
        name: 'chainId',
        type: 'uint256',
      },
      {
        name: 'verifyingContract',
        type: 'address',
      },
      {
        name: 'salt',
        type: 'bytes32',
      },
      {
        name: 'extensions',
        type: 'uint256[]',
      },
    ],
    stateMutability: 'view',
    type: 'function',
  },
  {
    inputs: [
      {
        name: 'channelId',
        type: 'bytes32',
      },
    ],
    name: 'getChannel',
    outputs: [
      {
        components: [
          {
            name: 'finalized',
            type: 'bool',
          },
          {
            name: 'closeRequestedAt',
            type: 'uint64',
          },
          {
            name: 'payer',
            type: 'address',
          },
          {
            name: 'payee',
            type: 'address',
          },
          {
            name: 'token',
            type: 'address',
          },
          {
            name: 'authorizedSigner',
            type: 'address',
          },
          {
            name: 'deposit',
            type: 'uint128',
          },
          {
            name: 'settled',
            type: 'uint128',
          },
        ],
        name: '',
        type: 'tuple',
      },
    ],
    stateMutability: 'view',
    type: 'function',
  },
  {
    inputs: [
      {
        name: 'channelId',
        type: 'bytes32',
      },
      {
        name: 'cumulativeAmount',
        type: 'uint128',
      },
    ],
    name: 'getVoucherDigest',
    outputs: [
      {
        name: '',
        type: 'bytes32',
      },
    ],
    stateMutability: 'view',
    type: 'function',
  },
  {
    inputs: [
      {
        name: 'payee',
        type: 'address',
      },
      {
        name: 'token',
        type: 'address',
      },
      {
        name: 'deposit',
        type: 'uint128',
      },
      {
        name: 'salt',
        type: 'bytes32',
      },
      {
        name: 'authorizedSigner',
        type: 'address',
      },
    ],
    name: 'open',
    outputs: [
      {
        name: 'channelId',
        type: 'bytes32',
      },
    ],
    stateMutability: 'nonpayable',
    type: 'function',
  },
  {
    inputs: [
      {
        name: 'payee',
        type: 'address',
      },
      {
        name: 'token',
        type: 'address',
      },
      {
        name: 'deposit',
        type: 'uint128',
      },
      {
        name: 'salt',
        type: 'bytes32',
      },
      {
        name: 'authorizedSigner',
        type: 'address',
      },
      {
        name: 'from',
        type: 'address',
      },
      {
        name: 'validAfter',
        type: 'uint256',
      },
      {
        name: 'validBefore',
        type: 'uint256',
      },
      {
        name: 'nonce',
        type: 'bytes32',
      },
      {
        name: 'signature',
        type: 'bytes',
      },
    ],
    name: 'openWithAuthorization',
    outputs: [
      {
        name: 'channelId',
        type: 'bytes32',
      },
    ],
    stateMutability: 'nonpayable',
    type: 'function',
  },
  {
    inputs: [
      {
        name: 'payee',
        type: 'address',
      },
      {
        name: 'channelId',
        type: 'bytes32',
      },
      {
        name: 'nonce',
        type: 'uint256',
      },
    ],
    name: 'payeeAuthorizationUsed',
    outputs: [
      {
        name: '',
        type: 'bool',
      },
    ],
    stateMutability: 'view',
    type: 'function',
  },
  {
    inputs: [
      {
        name: 'channelId',
        type: 'bytes32',
      },
    ],
    name: 'requestClose',
    outputs: [],
    stateMutability: 'nonpayable',
    type: 'function',
  },
  {
    inputs: [
      {
        name: 'channelId',
        type: 'bytes32',
      },
      {
        name: 'cumulativeAmount',
        type: 'uint128',
      },
      {
        name: 'signature',
        type: 'bytes',
      },
    ],
    name: 'settle',
    outputs: [],
    stateMutability: 'nonpayable',
    type: 'function',
  },
  {
    inputs: [],
    name: 'SETTLE_AUTHORIZATION_TYPEHASH',
    outputs: [
      {
        name: '',
        type: 'bytes32',
      },
    ],
    stateMutability: 'view',
    type: 'function',
  },
  {
    inputs: [
      {
        name: 'channelId',
        type: 'bytes32',
      },
      {
        name: 'cumulativeAmount',
        type: 'uint128',
      },
      {
        name: 'nonce',
        type: 'uint256',
      },
      {
        name: 'deadline',
        type: 'uint256',
      },
      {
        name: 'payeeSignature',
        type: 'bytes',
      },
      {
        name: 'voucherSignature',
        type: 'bytes',
      },
    ],
    name: 'settleWithAuthorization',
    outputs: [],
    stateMutability: 'nonpayable',
    type: 'function',
  },
  {
    inputs: [
      {
        name: 'channelId',
        type: 'bytes32',
      },
      {
        name: 'additionalDeposit',
        type: 'uint128',
      },
    ],
    name: 'topUp',
    outputs: [],
    stateMutability: 'nonpayable',
    type: 'function',
  },
  {
    inputs: [
      {
        name: 'channelId',
        type: 'bytes32',
      },
      {
        name: 'additionalDeposit',
        type: 'uint128',
      },
      {
        name: 'from',
        type: 'address',
      },
      {
        name: 'topUpSalt',
        type: 'bytes32',
      },
      {
        name: 'validAfter',
        type: 'uint256',
      },
      {
        name: 'validBefore',
        type: 'uint256',
      },
      {
        name: 'nonce',
        type: 'bytes32',
      },
      {
        name: 'signature',
        type: 'bytes',
      },
    ],
    name: 'topUpWithAuthorization',
    outputs: [],
    stateMutability: 'nonpayable',
    type: 'function',
  },
  {
    inputs: [],
    name: 'VOUCHER_TYPEHASH',
    outputs: [
      {
        name: '',
        type: 'bytes32',
      },
    ],
    stateMutability: 'view',
    type: 'function',
  },
  {
    inputs: [
      {
        name: 'channelId',
        type: 'bytes32',
      },
    ],
    name: 'withdraw',
    outputs: [],
    stateMutability: 'nonpayable',
    type: 'function',
  },
] as const;
