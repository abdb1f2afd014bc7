// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";

/// @notice The `bytes signature` form of EIP-3009's receiveWithAuthorization (works for EOAs and ERC-1271 wallets).
interface IReceiveWithAuthorization {
    function receiveWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes memory signature
    ) external;
}

/// @title ERC3009DepositCollector
/// @notice Pulls an x402 batch-settlement deposit with the payer's ERC-3009 ReceiveWithAuthorization and forwards it
/// to the batch-settlement contract. receiveWithAuthorization requires the payee to be the caller, so the tokens land
/// here first. The authorization nonce is keccak256(abi.encode(channelId, salt)): a signature is bound to one channel.
/// @dev The settlement address is an immutable (part of the runtime code), so anvil_setCode keeps it.
contract ERC3009DepositCollector {
    using SafeERC20 for IERC20;

    address public immutable batchSettlement;

    error OnlyBatchSettlement();

    constructor(address batchSettlement_) {
        batchSettlement = batchSettlement_;
    }

    /// @param collectorData abi.encode(uint256 validAfter, uint256 validBefore, uint256 salt, bytes signature)
    function collect(address payer, address token, uint256 amount, bytes32 channelId, bytes calldata collectorData)
        external
    {
        if (msg.sender != batchSettlement) revert OnlyBatchSettlement();
        (uint256 validAfter, uint256 validBefore, uint256 salt, bytes memory signature) =
            abi.decode(collectorData, (uint256, uint256, uint256, bytes));
        IReceiveWithAuthorization(token).receiveWithAuthorization(
            payer, address(this), amount, validAfter, validBefore, keccak256(abi.encode(channelId, salt)), signature
        );
        IERC20(token).safeTransfer(batchSettlement, amount);
    }
}
