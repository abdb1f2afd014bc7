// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {MockUSDC} from "./MockUSDC.sol";

/// @title MisreportingUSDC
/// @notice TEST DOUBLE. Identical to MockUSDC (same EIP-712 domain "USD Coin"/"2"), except that
/// transferWithAuthorization moves the full `value` but emits `Transfer(from, to, value - 1)`.
/// Used to prove the facilitator checks the receipt's Transfer event instead of trusting tx status.
contract MisreportingUSDC is MockUSDC {
    /// @dev Storage slot of OpenZeppelin ERC20's private `_balances` mapping. ERC20 is the first base of
    /// MockUSDC and declares `_balances` first, so the mapping lives at slot 0 (the e2e test checks the
    /// balances really move).
    uint256 private constant BALANCES_SLOT = 0;

    function _authorizedTransfer(address from, address to, uint256 value) internal override {
        require(from != address(0) && to != address(0), "ERC20: transfer to the zero address");
        uint256 fromBalance = balanceOf(from);
        require(fromBalance >= value, "ERC20: transfer amount exceeds balance");
        _writeBalance(from, fromBalance - value);
        _writeBalance(to, balanceOf(to) + value);
        emit Transfer(from, to, value == 0 ? 0 : value - 1);
    }

    function _writeBalance(address account, uint256 amount) private {
        bytes32 slot = keccak256(abi.encode(account, BALANCES_SLOT));
        assembly ("memory-safe") {
            sstore(slot, amount)
        }
    }
}
