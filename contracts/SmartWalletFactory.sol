// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {SmartWallet} from "./SmartWallet.sol";

/// @title SmartWalletFactory
/// @notice CREATE2 factory for SmartWallet, so wallets have counterfactual addresses (ERC-6492).
contract SmartWalletFactory {
    event WalletDeployed(address indexed wallet, address indexed owner, bytes32 salt);

    /// @notice Deploys the wallet for (owner, salt); returns the existing one if already deployed.
    function deploy(address owner, bytes32 salt) external returns (address wallet) {
        wallet = predict(owner, salt);
        if (wallet.code.length > 0) return wallet;
        SmartWallet created = new SmartWallet{salt: salt}(owner);
        require(address(created) == wallet, "SmartWalletFactory: address mismatch");
        emit WalletDeployed(wallet, owner, salt);
    }

    function predict(address owner, bytes32 salt) public view returns (address) {
        bytes32 initCodeHash = keccak256(abi.encodePacked(type(SmartWallet).creationCode, abi.encode(owner)));
        return address(uint160(uint256(keccak256(abi.encodePacked(bytes1(0xff), address(this), salt, initCodeHash)))));
    }
}
