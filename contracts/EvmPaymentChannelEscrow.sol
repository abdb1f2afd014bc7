// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {EIP712} from "@openzeppelin/contracts/utils/cryptography/EIP712.sol";
import {SignatureChecker} from "@openzeppelin/contracts/utils/cryptography/SignatureChecker.sol";
import {ReentrancyGuard} from "@openzeppelin/contracts/utils/ReentrancyGuard.sol";

/// @dev The EIP-3009 calls the relayed profile needs (USDC v2.2 has the `bytes signature` overload, ERC-1271 aware).
interface IERC3009Receiver {
    function receiveWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes memory signature
    ) external;

    function authorizationState(address authorizer, bytes32 nonce) external view returns (bool);
}

/// @title EvmPaymentChannelEscrow
/// @notice Unidirectional payment channels for the MPP `evm` `session` intent (draft-evm-session-00): a payer escrows an
///         ERC-20 deposit, signs cumulative EIP-712 vouchers off chain, and the payee settles or closes with the latest
///         one. The payer can force a close: requestClose, wait CLOSE_GRACE_PERIOD, withdraw the unsettled rest.
/// @dev Channel records are never deleted: `finalized` is sticky, so a finalized id can never be opened again and old
///      vouchers cannot replay. Fee-on-transfer and rebasing tokens are not supported.
contract EvmPaymentChannelEscrow is EIP712, ReentrancyGuard {
    using SafeERC20 for IERC20;

    struct Channel {
        bool finalized;
        uint64 closeRequestedAt;
        address payer;
        address payee;
        address token;
        address authorizedSigner;
        uint128 deposit;
        uint128 settled;
    }

    /// @notice How long a payer waits between requestClose and withdraw (the payee can still settle meanwhile).
    uint64 public constant CLOSE_GRACE_PERIOD = 15 minutes;

    bytes32 public constant VOUCHER_TYPEHASH = keccak256("Voucher(bytes32 channelId,uint128 cumulativeAmount)");

    /// @dev secp256k1n / 2: signatures above it are the malleable twin of a canonical one.
    uint256 private constant HALF_ORDER = 0x7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF5D576E7357A4501DDFE92F46681B20A0;

    bytes32 public constant SETTLE_AUTHORIZATION_TYPEHASH =
        keccak256("SettleAuthorization(bytes32 channelId,uint128 cumulativeAmount,uint256 nonce,uint256 deadline)");
    bytes32 public constant CLOSE_AUTHORIZATION_TYPEHASH =
        keccak256("CloseAuthorization(bytes32 channelId,uint128 cumulativeAmount,uint256 nonce,uint256 deadline)");

    mapping(bytes32 channelId => Channel) private _channels;
    /// @dev one used-set for both payee authorizations
    mapping(address payee => mapping(bytes32 channelId => mapping(uint256 nonce => bool))) private _usedPayeeNonces;

    error ChannelAlreadyExists();
    error ChannelNotFound();
    error ChannelFinalized();
    error NotPayee();
    error NotPayer();
    error AmountNotIncreasing();
    error AmountExceedsDeposit();
    error InvalidSignature();
    error NonceMismatch();
    error NonceAlreadyUsed();
    error AuthorizationExpired();
    error CloseNotReady();
    error ZeroDeposit();
    error DepositOverflow();

    event ChannelOpened(
        bytes32 indexed channelId,
        address indexed payer,
        address indexed payee,
        address token,
        address authorizedSigner,
        bytes32 salt,
        uint256 deposit
    );
    event Settled(
        bytes32 indexed channelId,
        address indexed payer,
        address indexed payee,
        uint256 cumulativeAmount,
        uint256 deltaPaid,
        uint256 newSettled
    );
    event TopUp(
        bytes32 indexed channelId,
        address indexed payer,
        address indexed payee,
        uint256 additionalDeposit,
        uint256 newDeposit
    );
    event CloseRequested(bytes32 indexed channelId, address indexed payer, address indexed payee, uint256 closeGraceEnd);
    event CloseRequestCancelled(bytes32 indexed channelId, address indexed payer, address indexed payee);
    event ChannelClosed(
        bytes32 indexed channelId,
        address indexed payer,
        address indexed payee,
        uint256 settledToPayee,
        uint256 refundedToPayer
    );

    constructor() EIP712("EVM Payment Channel", "1") {}

    // ---- core ----

    function open(address payee, address token, uint128 deposit, bytes32 salt, address authorizedSigner)
        external
        nonReentrant
        returns (bytes32 channelId)
    {
        channelId = _create(msg.sender, payee, token, deposit, salt, authorizedSigner);
        IERC20(token).safeTransferFrom(msg.sender, address(this), deposit);
    }

    function settle(bytes32 channelId, uint128 cumulativeAmount, bytes calldata signature) external nonReentrant {
        Channel storage channel = _live(channelId);
        if (msg.sender != channel.payee) revert NotPayee();
        _settle(channelId, channel, cumulativeAmount, signature);
    }

    function topUp(bytes32 channelId, uint128 additionalDeposit) external nonReentrant {
        Channel storage channel = _live(channelId);
        if (msg.sender != channel.payer) revert NotPayer();
        _addDeposit(channelId, channel, additionalDeposit);
        IERC20(channel.token).safeTransferFrom(msg.sender, address(this), additionalDeposit);
    }

    /// @notice Settles up to `cumulativeAmount` and refunds the rest to the payer. A `cumulativeAmount` at or below
    ///         what is already settled forfeits nothing more to the payee (its signature is not even read).
    function close(bytes32 channelId, uint128 cumulativeAmount, bytes calldata signature) external nonReentrant {
        Channel storage channel = _live(channelId);
        if (msg.sender != channel.payee) revert NotPayee();
        _close(channelId, channel, cumulativeAmount, signature);
    }

    function requestClose(bytes32 channelId) external nonReentrant {
        Channel storage channel = _live(channelId);
        if (msg.sender != channel.payer) revert NotPayer();
        // A second request keeps the first clock: the grace period cannot be pushed back by the payer.
        if (channel.closeRequestedAt != 0) return;
        channel.closeRequestedAt = uint64(block.timestamp);
        emit CloseRequested(channelId, channel.payer, channel.payee, block.timestamp + CLOSE_GRACE_PERIOD);
    }

    function withdraw(bytes32 channelId) external nonReentrant {
        Channel storage channel = _live(channelId);
        if (msg.sender != channel.payer) revert NotPayer();
        if (channel.closeRequestedAt == 0 || block.timestamp < uint256(channel.closeRequestedAt) + CLOSE_GRACE_PERIOD) {
            revert CloseNotReady();
        }
        _finalize(channelId, channel, 0);
    }

    // ---- relayed profile (EIP-3009 receiveWithAuthorization, to = this escrow) ----

    /// @notice Opens a channel for `from` with its ReceiveWithAuthorization; anyone may submit it. The nonce binds the
    ///         authorization to this channel's terms: keccak256(abi.encode(from, payee, token, salt, authorizedSigner)).
    function openWithAuthorization(
        address payee,
        address token,
        uint128 deposit,
        bytes32 salt,
        address authorizedSigner,
        address from,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes calldata signature
    ) external nonReentrant returns (bytes32 channelId) {
        if (nonce != keccak256(abi.encode(from, payee, token, salt, authorizedSigner))) revert NonceMismatch();
        _requireUsableAuthorization(token, from, validAfter, validBefore, nonce);
        channelId = _create(from, payee, token, deposit, salt, authorizedSigner);
        IERC3009Receiver(token).receiveWithAuthorization(
            from, address(this), deposit, validAfter, validBefore, nonce, signature
        );
    }

    /// @notice Adds the payer's ReceiveWithAuthorization to a channel; anyone may submit it. The nonce is
    ///         keccak256(abi.encode(channelId, additionalDeposit, from, topUpSalt)).
    function topUpWithAuthorization(
        bytes32 channelId,
        uint128 additionalDeposit,
        address from,
        bytes32 topUpSalt,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes calldata signature
    ) external nonReentrant {
        if (nonce != keccak256(abi.encode(channelId, additionalDeposit, from, topUpSalt))) revert NonceMismatch();
        Channel storage channel = _live(channelId);
        if (from != channel.payer) revert NotPayer();
        _requireUsableAuthorization(channel.token, from, validAfter, validBefore, nonce);
        _addDeposit(channelId, channel, additionalDeposit);
        IERC3009Receiver(channel.token).receiveWithAuthorization(
            from, address(this), additionalDeposit, validAfter, validBefore, nonce, signature
        );
    }

    // ---- relayed payee profile: anyone submits a settle/close the payee signed (EIP-712, this escrow's domain) ----

    /// @notice `settle` on the payee's behalf: the payee signed SettleAuthorization(channelId, cumulativeAmount, nonce,
    ///         deadline); each (payee, channelId, nonce) is usable once, and not after `deadline`.
    function settleWithAuthorization(
        bytes32 channelId,
        uint128 cumulativeAmount,
        uint256 nonce,
        uint256 deadline,
        bytes calldata payeeSignature,
        bytes calldata voucherSignature
    ) external nonReentrant {
        Channel storage channel = _live(channelId);
        _usePayeeAuthorization(SETTLE_AUTHORIZATION_TYPEHASH, channelId, channel, cumulativeAmount, nonce, deadline, payeeSignature);
        _settle(channelId, channel, cumulativeAmount, voucherSignature);
    }

    /// @notice `close` on the payee's behalf, under CloseAuthorization (same rules as settleWithAuthorization).
    function closeWithAuthorization(
        bytes32 channelId,
        uint128 cumulativeAmount,
        uint256 nonce,
        uint256 deadline,
        bytes calldata payeeSignature,
        bytes calldata voucherSignature
    ) external nonReentrant {
        Channel storage channel = _live(channelId);
        _usePayeeAuthorization(CLOSE_AUTHORIZATION_TYPEHASH, channelId, channel, cumulativeAmount, nonce, deadline, payeeSignature);
        _close(channelId, channel, cumulativeAmount, voucherSignature);
    }

    function payeeAuthorizationUsed(address payee, bytes32 channelId, uint256 nonce) external view returns (bool) {
        return _usedPayeeNonces[payee][channelId][nonce];
    }

    // ---- views ----

    function computeChannelId(address payer, address payee, address token, bytes32 salt, address authorizedSigner)
        public
        view
        returns (bytes32)
    {
        return keccak256(abi.encode(payer, payee, token, salt, authorizedSigner, address(this), block.chainid));
    }

    function getVoucherDigest(bytes32 channelId, uint128 cumulativeAmount) public view returns (bytes32) {
        return _hashTypedDataV4(keccak256(abi.encode(VOUCHER_TYPEHASH, channelId, cumulativeAmount)));
    }

    function domainSeparator() external view returns (bytes32) {
        return _domainSeparatorV4();
    }

    function getChannel(bytes32 channelId) external view returns (Channel memory) {
        return _channels[channelId];
    }

    // ---- internals ----

    function _settle(bytes32 channelId, Channel storage channel, uint128 cumulativeAmount, bytes calldata signature) private {
        if (cumulativeAmount <= channel.settled) revert AmountNotIncreasing();
        if (cumulativeAmount > channel.deposit) revert AmountExceedsDeposit();
        _requireVoucher(channelId, channel, cumulativeAmount, signature);
        uint128 delta = cumulativeAmount - channel.settled;
        channel.settled = cumulativeAmount;
        emit Settled(channelId, channel.payer, channel.payee, cumulativeAmount, delta, cumulativeAmount);
        IERC20(channel.token).safeTransfer(channel.payee, delta);
    }

    function _close(bytes32 channelId, Channel storage channel, uint128 cumulativeAmount, bytes calldata signature) private {
        uint128 delta;
        if (cumulativeAmount > channel.settled) {
            if (cumulativeAmount > channel.deposit) revert AmountExceedsDeposit();
            _requireVoucher(channelId, channel, cumulativeAmount, signature);
            delta = cumulativeAmount - channel.settled;
            channel.settled = cumulativeAmount;
            emit Settled(channelId, channel.payer, channel.payee, cumulativeAmount, delta, cumulativeAmount);
        }
        _finalize(channelId, channel, delta);
    }

    function _usePayeeAuthorization(
        bytes32 typeHash,
        bytes32 channelId,
        Channel storage channel,
        uint128 cumulativeAmount,
        uint256 nonce,
        uint256 deadline,
        bytes calldata payeeSignature
    ) private {
        if (block.timestamp > deadline) revert AuthorizationExpired();
        if (_usedPayeeNonces[channel.payee][channelId][nonce]) revert NonceAlreadyUsed();
        bytes32 digest = _hashTypedDataV4(keccak256(abi.encode(typeHash, channelId, cumulativeAmount, nonce, deadline)));
        if (!SignatureChecker.isValidSignatureNow(channel.payee, digest, payeeSignature)) revert InvalidSignature();
        _usedPayeeNonces[channel.payee][channelId][nonce] = true;
    }

    function _create(
        address payer,
        address payee,
        address token,
        uint128 deposit,
        bytes32 salt,
        address authorizedSigner
    ) private returns (bytes32 channelId) {
        if (deposit == 0) revert ZeroDeposit();
        channelId = computeChannelId(payer, payee, token, salt, authorizedSigner);
        Channel storage channel = _channels[channelId];
        if (channel.payer != address(0)) revert ChannelAlreadyExists();
        channel.payer = payer;
        channel.payee = payee;
        channel.token = token;
        channel.authorizedSigner = authorizedSigner;
        channel.deposit = deposit;
        emit ChannelOpened(channelId, payer, payee, token, authorizedSigner, salt, deposit);
    }

    function _live(bytes32 channelId) private view returns (Channel storage channel) {
        channel = _channels[channelId];
        if (channel.payer == address(0)) revert ChannelNotFound();
        if (channel.finalized) revert ChannelFinalized();
    }

    function _addDeposit(bytes32 channelId, Channel storage channel, uint128 additionalDeposit) private {
        if (additionalDeposit == 0) revert ZeroDeposit();
        uint256 newDeposit = uint256(channel.deposit) + additionalDeposit;
        if (newDeposit > type(uint128).max) revert DepositOverflow();
        channel.deposit = uint128(newDeposit);
        if (channel.closeRequestedAt != 0) {
            channel.closeRequestedAt = 0;
            emit CloseRequestCancelled(channelId, channel.payer, channel.payee);
        }
        emit TopUp(channelId, channel.payer, channel.payee, additionalDeposit, newDeposit);
    }

    /// @dev Pays the payee `delta` and the payer everything unsettled, and marks the channel finalized for good.
    function _finalize(bytes32 channelId, Channel storage channel, uint128 delta) private {
        uint128 refund = channel.deposit - channel.settled;
        channel.finalized = true;
        emit ChannelClosed(channelId, channel.payer, channel.payee, channel.settled, refund);
        IERC20 token = IERC20(channel.token);
        if (delta > 0) token.safeTransfer(channel.payee, delta);
        if (refund > 0) token.safeTransfer(channel.payer, refund);
    }

    /// @dev 65-byte r||s||v only (no EIP-2098), low s, signed by the authorized signer (or the payer): ECDSA for an
    ///      EOA, ERC-1271 for a contract signer.
    function _requireVoucher(bytes32 channelId, Channel storage channel, uint128 cumulativeAmount, bytes calldata signature)
        private
        view
    {
        if (signature.length != 65) revert InvalidSignature();
        if (uint256(bytes32(signature[32:64])) > HALF_ORDER) revert InvalidSignature();
        address signer = channel.authorizedSigner == address(0) ? channel.payer : channel.authorizedSigner;
        if (!SignatureChecker.isValidSignatureNow(signer, getVoucherDigest(channelId, cumulativeAmount), signature)) {
            revert InvalidSignature();
        }
    }

    /// @dev Named errors for what the token would refuse with a string: a used nonce, a window not open now.
    function _requireUsableAuthorization(
        address token,
        address from,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce
    ) private view {
        if (IERC3009Receiver(token).authorizationState(from, nonce)) revert NonceAlreadyUsed();
        if (block.timestamp <= validAfter || block.timestamp >= validBefore) revert AuthorizationExpired();
    }
}
