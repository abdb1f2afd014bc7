// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";
import {EIP712} from "@openzeppelin/contracts/utils/cryptography/EIP712.sol";
import {SignatureChecker} from "@openzeppelin/contracts/utils/cryptography/SignatureChecker.sol";
import {Multicall} from "@openzeppelin/contracts/utils/Multicall.sol";
import {ReentrancyGuardTransient} from "@openzeppelin/contracts/utils/ReentrancyGuardTransient.sol";

/// @notice Pulls a deposit from the payer into the batch-settlement contract (ERC-3009, Permit2, ...).
interface IBatchDepositCollector {
    function collect(address payer, address token, uint256 amount, bytes32 channelId, bytes calldata collectorData)
        external;
}

/// @title X402BatchSettlement
/// @notice Unidirectional payment channels for the x402 `batch-settlement` scheme on EVM: a payer escrows tokens
/// per channel, signs cumulative vouchers off chain, and the receiver side claims them in batches and sweeps the
/// claimed total per (receiver, token) with one transfer.
/// @dev Our own implementation of the scheme's ABI and EIP-712 types. It keeps no configuration in storage (only
/// constants), and OpenZeppelin's EIP712 rebuilds its separator when address(this) differs from the deployment
/// address, so the runtime code can be placed at the canonical address with anvil_setCode.
/// `channelId` is the full EIP-712 digest of the ChannelConfig, so it is bound to the chain and to this address.
contract X402BatchSettlement is EIP712, Multicall, ReentrancyGuardTransient {
    using SafeERC20 for IERC20;

    struct ChannelConfig {
        address payer;
        address payerAuthorizer;
        address receiver;
        address receiverAuthorizer;
        address token;
        uint40 withdrawDelay;
        bytes32 salt;
    }

    struct Voucher {
        ChannelConfig channel;
        uint128 maxClaimableAmount;
    }

    struct VoucherClaim {
        Voucher voucher;
        bytes signature;
        uint128 totalClaimed;
    }

    struct Channel {
        uint128 balance;
        uint128 totalClaimed;
    }

    struct PendingWithdrawal {
        uint128 amount;
        uint40 initiatedAt;
    }

    struct ReceiverTotals {
        uint128 totalClaimed;
        uint128 totalSettled;
    }

    uint40 public constant MIN_WITHDRAW_DELAY = 15 minutes;
    uint40 public constant MAX_WITHDRAW_DELAY = 30 days;

    bytes32 public constant CHANNEL_CONFIG_TYPEHASH = keccak256(
        "ChannelConfig(address payer,address payerAuthorizer,address receiver,address receiverAuthorizer,address token,uint40 withdrawDelay,bytes32 salt)"
    );
    bytes32 public constant VOUCHER_TYPEHASH = keccak256("Voucher(bytes32 channelId,uint128 maxClaimableAmount)");
    bytes32 public constant REFUND_TYPEHASH = keccak256("Refund(bytes32 channelId,uint256 nonce,uint128 amount)");
    bytes32 public constant CLAIM_ENTRY_TYPEHASH =
        keccak256("ClaimEntry(bytes32 channelId,uint128 maxClaimableAmount,uint128 totalClaimed)");
    bytes32 public constant CLAIM_BATCH_TYPEHASH = keccak256(
        "ClaimBatch(ClaimEntry[] claims)ClaimEntry(bytes32 channelId,uint128 maxClaimableAmount,uint128 totalClaimed)"
    );

    mapping(bytes32 channelId => Channel) public channels;
    mapping(bytes32 channelId => PendingWithdrawal) public pendingWithdrawals;
    mapping(bytes32 channelId => uint256) public refundNonce;
    mapping(address receiver => mapping(address token => ReceiverTotals)) public receivers;

    event ChannelCreated(bytes32 indexed channelId, ChannelConfig config);
    event ChannelClosed(bytes32 indexed channelId, ChannelConfig config);
    event Deposited(bytes32 indexed channelId, address indexed sender, uint128 amount, uint128 newBalance);
    event Claimed(bytes32 indexed channelId, address indexed sender, uint128 claimAmount, uint128 newTotalClaimed);
    event Settled(address indexed receiver, address indexed token, address indexed sender, uint128 amount);
    event Refunded(bytes32 indexed channelId, address indexed sender, uint128 amount);
    event WithdrawInitiated(bytes32 indexed channelId, uint128 amount, uint40 finalizeAfter);
    event WithdrawFinalized(bytes32 indexed channelId, address indexed sender, uint128 amount);

    error InvalidChannel();
    error ZeroDeposit();
    error DepositOverflow();
    error InvalidSignature();
    error NotReceiverAuthorizer();
    error NotAuthorizedToClaim();
    error NotAuthorizedToRefund();
    error ClaimExceedsCeiling();
    error ClaimExceedsBalance();
    error WithdrawalAlreadyPending();
    error WithdrawalNotPending();
    error NotAuthorizedToFinalizeWithdraw();
    error WithdrawDelayNotElapsed();
    error NothingToWithdraw();
    error WithdrawAmountExceedsAvailable();
    error WithdrawDelayOutOfRange();
    error EmptyBatch();
    error DepositCollectionFailed();
    error InvalidCollector();
    error InvalidRefundNonce();
    error ZeroRefund();

    constructor() EIP712("x402 Batch Settlement", "1") {}

    // ------------------------------------------------------------------ deposits

    /// @notice Escrow `amount` into the channel of `config`; `collector` pulls it from the payer. The contract's
    /// token balance must rise by exactly `amount` (no fee-on-transfer tokens, no short pulls).
    function deposit(ChannelConfig calldata config, uint128 amount, address collector, bytes calldata collectorData)
        external
        nonReentrant
    {
        if (
            config.payer == address(0) || config.receiver == address(0) || config.receiverAuthorizer == address(0)
                || config.token == address(0)
        ) revert InvalidChannel();
        if (config.withdrawDelay < MIN_WITHDRAW_DELAY || config.withdrawDelay > MAX_WITHDRAW_DELAY) {
            revert WithdrawDelayOutOfRange();
        }
        if (amount == 0) revert ZeroDeposit();
        if (collector == address(0)) revert InvalidCollector();

        bytes32 channelId = getChannelId(config);
        Channel storage channel = channels[channelId];
        uint128 previousBalance = channel.balance;
        if (amount > type(uint128).max - previousBalance) revert DepositOverflow();
        // Effects before the external pull (the guard blocks re-entry, this keeps the order honest too).
        channel.balance = previousBalance + amount;

        IERC20 token = IERC20(config.token);
        uint256 held = token.balanceOf(address(this));
        IBatchDepositCollector(collector).collect(config.payer, config.token, amount, channelId, collectorData);
        if (token.balanceOf(address(this)) != held + amount) revert DepositCollectionFailed();

        if (previousBalance == 0 && channel.totalClaimed == 0) emit ChannelCreated(channelId, config);
        emit Deposited(channelId, msg.sender, amount, channel.balance);
    }

    // ------------------------------------------------------------------ claims and settlement

    /// @notice Apply claim rows; the caller must be each row's receiver or receiverAuthorizer.
    function claim(VoucherClaim[] calldata voucherClaims) external nonReentrant {
        if (voucherClaims.length == 0) revert EmptyBatch();
        for (uint256 i; i < voucherClaims.length; ++i) {
            if (!_onReceiverSide(msg.sender, voucherClaims[i].voucher.channel)) revert NotAuthorizedToClaim();
            _applyClaim(voucherClaims[i]);
        }
    }

    /// @notice Apply claim rows authorized by one receiverAuthorizer signature over the whole batch (anyone may relay).
    function claimWithSignature(VoucherClaim[] calldata voucherClaims, bytes calldata authorizerSignature)
        external
        nonReentrant
    {
        if (voucherClaims.length == 0) revert EmptyBatch();
        address authorizer = voucherClaims[0].voucher.channel.receiverAuthorizer;
        if (!SignatureChecker.isValidSignatureNow(authorizer, getClaimBatchDigest(voucherClaims), authorizerSignature))
        {
            revert InvalidSignature();
        }
        for (uint256 i; i < voucherClaims.length; ++i) {
            if (voucherClaims[i].voucher.channel.receiverAuthorizer != authorizer) revert NotReceiverAuthorizer();
            _applyClaim(voucherClaims[i]);
        }
    }

    /// @notice Pay `receiver` everything claimed for it in `token` and not yet paid (anyone may call).
    function settle(address receiver, address token) external nonReentrant {
        ReceiverTotals storage totals = receivers[receiver][token];
        uint128 owed = totals.totalClaimed - totals.totalSettled;
        if (owed == 0) return;
        totals.totalSettled = totals.totalClaimed;
        IERC20(token).safeTransfer(receiver, owed);
        emit Settled(receiver, token, msg.sender, owed);
    }

    // ------------------------------------------------------------------ payer withdrawals

    /// @notice Start a timed withdrawal of unclaimed escrow (payer or payerAuthorizer).
    function initiateWithdraw(ChannelConfig calldata config, uint128 amount) external nonReentrant {
        if (msg.sender != config.payer && msg.sender != config.payerAuthorizer) revert InvalidChannel();
        if (amount == 0) revert NothingToWithdraw();
        bytes32 channelId = getChannelId(config);
        PendingWithdrawal storage pending = pendingWithdrawals[channelId];
        if (pending.initiatedAt != 0) revert WithdrawalAlreadyPending();
        Channel storage channel = channels[channelId];
        if (amount > channel.balance - channel.totalClaimed) revert WithdrawAmountExceedsAvailable();
        uint40 now_ = uint40(block.timestamp);
        pending.amount = amount;
        pending.initiatedAt = now_;
        emit WithdrawInitiated(channelId, amount, now_ + config.withdrawDelay);
    }

    /// @notice Finish a pending withdrawal once the channel's delay has passed; capped at the unclaimed escrow then.
    function finalizeWithdraw(ChannelConfig calldata config) external nonReentrant {
        if (msg.sender != config.payer && msg.sender != config.payerAuthorizer) {
            revert NotAuthorizedToFinalizeWithdraw();
        }
        bytes32 channelId = getChannelId(config);
        PendingWithdrawal storage pending = pendingWithdrawals[channelId];
        if (pending.initiatedAt == 0) revert WithdrawalNotPending();
        if (block.timestamp < uint256(pending.initiatedAt) + config.withdrawDelay) revert WithdrawDelayNotElapsed();

        Channel storage channel = channels[channelId];
        uint128 unclaimed = channel.balance - channel.totalClaimed;
        uint128 paid = pending.amount < unclaimed ? pending.amount : unclaimed;
        delete pendingWithdrawals[channelId];
        channel.balance -= paid;

        emit WithdrawFinalized(channelId, msg.sender, paid);
        if (channel.balance == 0 && channel.totalClaimed == 0) emit ChannelClosed(channelId, config);
        if (paid > 0) IERC20(config.token).safeTransfer(config.payer, paid);
    }

    // ------------------------------------------------------------------ refunds

    /// @notice Cooperative refund of unclaimed escrow to the payer (receiver or receiverAuthorizer).
    function refund(ChannelConfig calldata config, uint128 amount) external nonReentrant {
        if (!_onReceiverSide(msg.sender, config)) revert NotAuthorizedToRefund();
        _refund(config, amount);
    }

    /// @notice Cooperative refund authorized by a receiverAuthorizer signature at the channel's current refund nonce.
    function refundWithSignature(
        ChannelConfig calldata config,
        uint128 amount,
        uint256 nonce,
        bytes calldata receiverAuthorizerSignature
    ) external nonReentrant {
        bytes32 channelId = getChannelId(config);
        if (nonce != refundNonce[channelId]) revert InvalidRefundNonce();
        if (
            !SignatureChecker.isValidSignatureNow(
                config.receiverAuthorizer, getRefundDigest(channelId, nonce, amount), receiverAuthorizerSignature
            )
        ) revert InvalidSignature();
        _refund(config, amount);
    }

    // ------------------------------------------------------------------ views

    function getChannelId(ChannelConfig calldata config) public view returns (bytes32) {
        return _hashTypedDataV4(keccak256(abi.encode(CHANNEL_CONFIG_TYPEHASH, config)));
    }

    function getVoucherDigest(bytes32 channelId, uint128 maxClaimableAmount) public view returns (bytes32) {
        return _hashTypedDataV4(keccak256(abi.encode(VOUCHER_TYPEHASH, channelId, maxClaimableAmount)));
    }

    function getRefundDigest(bytes32 channelId, uint256 nonce, uint128 amount) public view returns (bytes32) {
        return _hashTypedDataV4(keccak256(abi.encode(REFUND_TYPEHASH, channelId, nonce, amount)));
    }

    /// @notice The digest a receiverAuthorizer signs for claimWithSignature: an array of ClaimEntry structs hashes
    /// as keccak256 of the concatenated entry hashes (EIP-712 arrays).
    function getClaimBatchDigest(VoucherClaim[] calldata voucherClaims) public view returns (bytes32) {
        bytes32[] memory entries = new bytes32[](voucherClaims.length);
        for (uint256 i; i < voucherClaims.length; ++i) {
            entries[i] = keccak256(
                abi.encode(
                    CLAIM_ENTRY_TYPEHASH,
                    getChannelId(voucherClaims[i].voucher.channel),
                    voucherClaims[i].voucher.maxClaimableAmount,
                    voucherClaims[i].totalClaimed
                )
            );
        }
        return _hashTypedDataV4(keccak256(abi.encode(CLAIM_BATCH_TYPEHASH, keccak256(abi.encodePacked(entries)))));
    }

    // ------------------------------------------------------------------ internals

    function _onReceiverSide(address account, ChannelConfig calldata config) private pure returns (bool) {
        return account == config.receiver || account == config.receiverAuthorizer;
    }

    /// @dev A row at or below the recorded total is a no-op, so replaying an applied claim does nothing.
    function _applyClaim(VoucherClaim calldata row) private {
        ChannelConfig calldata config = row.voucher.channel;
        bytes32 channelId = getChannelId(config);
        Channel storage channel = channels[channelId];
        uint128 recorded = channel.totalClaimed;
        if (row.totalClaimed <= recorded) return;
        if (row.totalClaimed > row.voucher.maxClaimableAmount) revert ClaimExceedsCeiling();
        if (row.totalClaimed > channel.balance) revert ClaimExceedsBalance();

        bytes32 digest = getVoucherDigest(channelId, row.voucher.maxClaimableAmount);
        bool signed = config.payerAuthorizer != address(0)
            ? ECDSA.recoverCalldata(digest, row.signature) == config.payerAuthorizer
            : SignatureChecker.isValidSignatureNow(config.payer, digest, row.signature);
        if (!signed) revert InvalidSignature();

        uint128 delta = row.totalClaimed - recorded;
        channel.totalClaimed = row.totalClaimed;
        receivers[config.receiver][config.token].totalClaimed += delta;
        emit Claimed(channelId, msg.sender, delta, row.totalClaimed);
    }

    /// @dev The nonce moves first, even when nothing is left to refund, so a used refund signature never replays.
    function _refund(ChannelConfig calldata config, uint128 amount) private {
        if (amount == 0) revert ZeroRefund();
        bytes32 channelId = getChannelId(config);
        refundNonce[channelId] += 1;

        Channel storage channel = channels[channelId];
        uint128 unclaimed = channel.balance - channel.totalClaimed;
        uint128 refunded = amount < unclaimed ? amount : unclaimed;
        if (refunded == 0) return;
        channel.balance -= refunded;

        PendingWithdrawal storage pending = pendingWithdrawals[channelId];
        if (pending.initiatedAt != 0) {
            if (refunded >= pending.amount) delete pendingWithdrawals[channelId];
            else pending.amount -= refunded;
        }

        emit Refunded(channelId, msg.sender, refunded);
        if (channel.balance == 0 && channel.totalClaimed == 0) emit ChannelClosed(channelId, config);
        IERC20(config.token).safeTransfer(config.payer, refunded);
    }
}
